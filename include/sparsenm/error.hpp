// sparsenm — one exception hierarchy. Every message names the argument and the rule it broke.
#pragma once
#include <stdexcept>
#include <string>

namespace sparsenm {

/// Base of every exception sparsenm throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An argument broke a documented rule. what() = "<argument>: <rule> (got <value>)".
class InvalidArgument : public Error {
 public:
  InvalidArgument(const std::string& argument, const std::string& rule);
  const std::string& argument() const noexcept { return argument_; }

 private:
  std::string argument_;
};

/// A dense matrix does not satisfy the pattern it was declared to have.
class PatternViolation : public InvalidArgument {
 public:
  PatternViolation(const std::string& argument, const std::string& rule, long long row, long long col)
      : InvalidArgument(argument, rule), row_(row), col_(col) {}
  long long row() const noexcept { return row_; }
  long long col() const noexcept { return col_; }

 private:
  long long row_, col_;
};

/// A file or buffer is malformed (corrupt, truncated, oversized header, ...).
class FormatError : public Error {
 public:
  using Error::Error;
};

/// Reading or writing a file failed at the operating-system level.
class IoError : public Error {
 public:
  using Error::Error;
};

/// A valid request this build or device cannot serve (no GPU, dtype not compiled in, ...).
class Unsupported : public Error {
 public:
  using Error::Error;
};

/// A CUDA runtime / library call failed. what() names the call and the error string.
class CudaError : public Error {
 public:
  using Error::Error;
};

}  // namespace sparsenm
