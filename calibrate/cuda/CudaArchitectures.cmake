# sm_80 (A100), sm_90 (H100/H200) and sm_100 (B200) where the toolkit supports them; included before
# enable_language(CUDA) / project(... CUDA) so CMake does not pick its own default.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND CMAKE_CUDA_COMPILER)
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-arch OUTPUT_VARIABLE orrery_cuda_archs ERROR_QUIET)
  set(CMAKE_CUDA_ARCHITECTURES "")
  foreach(arch 80 90 100)
    if(orrery_cuda_archs MATCHES "compute_${arch}")
      list(APPEND CMAKE_CUDA_ARCHITECTURES ${arch})
    endif()
  endforeach()
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80)
  endif()
endif()
