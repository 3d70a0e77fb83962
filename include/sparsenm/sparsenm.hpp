// sparsenm — umbrella header.
#pragma once
#include "sparsenm/dtype.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/format.hpp"
#include "sparsenm/io.hpp"
#include "sparsenm/matrix.hpp"
#include "sparsenm/pattern.hpp"
#include "sparsenm/plan.hpp"
#include "sparsenm/prune.hpp"
#include "sparsenm/reference.hpp"
#include "sparsenm/version.hpp"
