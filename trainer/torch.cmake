# libtorch parts of the trainer (included from trainer/CMakeLists.txt when
# TUNE_WITH_TORCH is on). One static library, lora_core, holds every libtorch
# translation unit; torch/torch.h is precompiled once and the PCH is reused
# by lora_train, the trainer tests and the trainer bench.
find_package(Torch REQUIRED)
# Two libtorch builds are supported: Debian's (CPU) and the one inside PyPI's
# CUDA torch wheel (scripts/build-cuda.sh). With libtorch-dev installed,
# find_package(Torch) from the wheel still finds Debian's libtorch.so and
# libc10.so unless TORCH_LIBRARY / c10_LIBRARY say otherwise: refuse a mix.
get_filename_component(_torch_prefix "${Torch_DIR}/../../.." REALPATH)
foreach(_lib TORCH_LIBRARY c10_LIBRARY)
  get_filename_component(_real "${${_lib}}" REALPATH)
  string(FIND "${_real}" "${_torch_prefix}/" _at)
  if(NOT _at EQUAL 0)
    message(FATAL_ERROR "trainer: ${_lib} is ${_real}, outside the libtorch of ${Torch_DIR} "
                        "(${_torch_prefix}): two libtorch versions would be mixed; set -D${_lib}=")
  endif()
endforeach()
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(TUNE_TORCH_CUDA ON)
else()
  set(TUNE_TORCH_CUDA OFF)
endif()
message(STATUS "trainer: libtorch ${Torch_VERSION} in ${_torch_prefix}, CUDA ${TUNE_TORCH_CUDA}")
# Torch's imported targets are directory-scoped; tests/trainer and bench link
# lora_core from other directories, so make them global.
get_property(_torch_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(t ${_torch_imported})
  get_target_property(_is_global ${t} IMPORTED_GLOBAL)
  if(NOT _is_global)
    set_target_properties(${t} PROPERTIES IMPORTED_GLOBAL TRUE)
  endif()
endforeach()
if(NOT TARGET lora_text)
  message(WARNING "trainer: lora_text (tokenizer, data) is not built; lora_train skipped")
  return()
endif()

add_library(lora_core STATIC
  model_config.cc
  config_keys.cc
  rope_config.cc
  rope.cc
  lora_config.cc
  lr_schedule.cc
  runtime_info.cc
  safetensors.cc
  model.cc
  quant_4bit.cc
  quant_linear.cc
  checkpoint.cc
  checkpointing.cc
  rng_state.cc
  device.cc
  distributed.cc
  train_loop.cc
  commands.cc
)
target_include_directories(lora_core PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(lora_core
  PUBLIC ${TORCH_LIBRARIES} lora_text lora_safetensors_header tune_core nlohmann_json::nlohmann_json
  PRIVATE CLI11::CLI11 ${CMAKE_DL_LIBS})
target_compile_options(lora_core PUBLIC ${TORCH_CXX_FLAGS})
if(TUNE_TORCH_CUDA)
  # trainer/device.cc (GPU properties) and trainer/distributed.cc (NCCL).
  target_compile_definitions(lora_core PUBLIC TUNE_WITH_CUDA)
  # The nccl.h of the NCCL libtorch_cuda links (scripts/build-cuda.sh: the
  # wheel's), ahead of an older one in the CUDA toolkit: ProcessGroupNCCL's
  # layout depends on the NCCL version its header reports.
  if(TUNE_NCCL_INCLUDE_DIR)
    target_include_directories(lora_core SYSTEM BEFORE PUBLIC ${TUNE_NCCL_INCLUDE_DIR})
  endif()
endif()
target_precompile_headers(lora_core PRIVATE <torch/torch.h>)

# main.cc only parses flags (CLI11, no libtorch include).
add_executable(lora_train main.cc)
target_link_libraries(lora_train PRIVATE lora_core CLI11::CLI11)

if(TUNE_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/trainer_bench.cc)
  add_executable(trainer_bench ${PROJECT_SOURCE_DIR}/bench/trainer_bench.cc)
  target_link_libraries(trainer_bench PRIVATE lora_core)
  target_precompile_headers(trainer_bench REUSE_FROM lora_core)
endif()
