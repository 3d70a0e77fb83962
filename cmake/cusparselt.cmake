# Optional cuSPARSELt (a benchmark peer). SPARSENM_CUSPARSELT_ROOT: a folder with
# include/cusparseLt.h and lib/libcusparseLt.so* (PyPI nvidia-cusparselt-cu13 puts them under
# site-packages/nvidia/cu13 or .../nvidia/cusparselt). When found, the INTERFACE target
# sparsenm_cusparselt carries the include path, the library and SPARSENM_HAVE_CUSPARSELT=1.
set(SPARSENM_CUSPARSELT_ROOT "" CACHE PATH "cuSPARSELt root (include/cusparseLt.h, lib/libcusparseLt.so*)")
if(SPARSENM_CUDA AND SPARSENM_CUSPARSELT_ROOT AND NOT TARGET sparsenm_cusparselt)
  find_path(SPARSENM_CUSPARSELT_INCLUDE cusparseLt.h PATHS ${SPARSENM_CUSPARSELT_ROOT}/include NO_DEFAULT_PATH)
  find_library(SPARSENM_CUSPARSELT_LIBRARY NAMES cusparseLt libcusparseLt.so.0
               PATHS ${SPARSENM_CUSPARSELT_ROOT}/lib NO_DEFAULT_PATH)
  if(SPARSENM_CUSPARSELT_INCLUDE AND SPARSENM_CUSPARSELT_LIBRARY)
    add_library(sparsenm_cusparselt INTERFACE)
    target_include_directories(sparsenm_cusparselt INTERFACE ${SPARSENM_CUSPARSELT_INCLUDE})
    target_link_libraries(sparsenm_cusparselt INTERFACE ${SPARSENM_CUSPARSELT_LIBRARY})
    target_compile_definitions(sparsenm_cusparselt INTERFACE SPARSENM_HAVE_CUSPARSELT=1)
    message(STATUS "sparsenm: cuSPARSELt ${SPARSENM_CUSPARSELT_LIBRARY}")
  else()
    message(STATUS "sparsenm: cuSPARSELt not found under ${SPARSENM_CUSPARSELT_ROOT}")
  endif()
endif()
