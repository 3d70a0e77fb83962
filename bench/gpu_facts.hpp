// sparsenm bench — device facts the harness records once per run (implemented in gpu_facts.cu
// with CUDA; harness.cpp uses the CPU fallbacks otherwise).
#pragma once
#include <string>

namespace sparsenm::bench {

/// True when this build has CUDA and a device answers.
bool gpu_present();
/// e.g. "NVIDIA H200"; "cpu" without a device.
std::string gpu_name();
/// SM / memory clocks as text when readable, else "".
std::string gpu_clocks();
/// Device-to-device copy bandwidth in GB/s (bytes read + written) of a 1 GiB cudaMemcpy, median
/// of 10 after 3 warm-ups; 0 without a device.
double measure_copy_GBps();

}  // namespace sparsenm::bench
