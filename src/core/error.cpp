#include "sparsenm/error.hpp"

namespace sparsenm {

InvalidArgument::InvalidArgument(const std::string& argument, const std::string& rule)
    : Error(argument + ": " + rule), argument_(argument) {}

}  // namespace sparsenm
