// sparsenm CLI — option parsing helpers, tables, progress.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "cli.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm::cli {

Pattern parse_pattern_option(const std::string& text, const std::string& option) {
  try {
    return Pattern::parse(text, option);
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    if (msg.find(option) == std::string::npos) msg = option + ": " + msg;
    throw UsageError(msg);
  }
}

std::pair<std::int64_t, std::int64_t> parse_shape_option(const std::string& text, const std::string& option) {
  auto x = text.find('x');
  auto bad = [&] { return UsageError(option + ": expected NxK with N, K >= 1 (got '" + text + "')"); };
  if (x == std::string::npos) throw bad();
  std::int64_t n = 0, k = 0;
  const char* b = text.data();
  const char* e = text.data() + text.size();
  auto r1 = std::from_chars(b, b + x, n);
  auto r2 = std::from_chars(b + x + 1, e, k);
  if (r1.ec != std::errc() || r1.ptr != b + x || r2.ec != std::errc() || r2.ptr != e || n < 1 || k < 1) throw bad();
  return {n, k};
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[u]);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// ---- Table -------------------------------------------------------------------------------------

Table::Table(std::vector<std::string> header, std::vector<bool> right) : right_(std::move(right)) {
  right_.resize(header.size(), false);
  rows_.push_back(std::move(header));
}

void Table::add(std::vector<std::string> row) {
  row.resize(rows_.front().size());
  rows_.push_back(std::move(row));
}

void Table::separator() { rows_.emplace_back(); }

std::string Table::str() const {
  std::vector<std::size_t> width(rows_.front().size(), 0);
  for (const auto& r : rows_)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::size_t total = 0;
  for (auto w : width) total += w + 2;
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::size_t pad = width[c] - r[c].size();
      if (c) s += "  ";
      if (right_[c]) s += std::string(pad, ' ') + r[c];
      else s += r[c] + (c + 1 < r.size() ? std::string(pad, ' ') : "");
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out += s + "\n";
  };
  line(rows_.front());
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (std::size_t i = 1; i < rows_.size(); ++i) {
    if (rows_[i].empty()) out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
    else line(rows_[i]);
  }
  return out;
}

// ---- Progress ----------------------------------------------------------------------------------

Progress::Progress(std::string verb, std::size_t total)
    : verb_(std::move(verb)), total_(total), tty_(::isatty(::fileno(stderr)) == 1) {}

void Progress::step(const std::string& item) {
  ++count_;
  if (tty_) {
    constexpr int kWidth = 28;
    const int filled = total_ ? int(kWidth * (count_ - 1) / total_) : kWidth;
    std::string bar(std::size_t(filled), '=');
    if (filled < kWidth) bar += '>';
    bar.resize(kWidth, ' ');
    std::string shown = item.size() > 48 ? "..." + item.substr(item.size() - 45) : item;
    fmt::print(stderr, "\r\033[K[{}] {}/{} {} {}", bar, count_, total_, verb_, shown);
  } else {
    fmt::print(stderr, "{} {}/{}: {}\n", verb_, count_, total_, item);
  }
  std::fflush(stderr);
}

void Progress::done() {
  if (tty_ && count_ > 0) {
    fmt::print(stderr, "\r\033[K[{}] {}/{} done\n", std::string(28, '='), count_, total_);
    std::fflush(stderr);
  }
}

}  // namespace sparsenm::cli
