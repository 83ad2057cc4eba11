# Power loss during checkpoint writes (issue 35 item 6): `olmo train` under an LD_PRELOAD shim
# that records its file-system calls under the run dir; every crash point replayed (only what
# was fsynced survives) must leave a newest complete checkpoint that verifies and resumes, and
# never a torn one that looks complete; a control run without the data fsync must fail. One
# process, one with trainer.async_checkpoint=true (the writer thread), then 2 ranks under mpirun
# (RESOURCE_LOCK mpi).
add_library(olmo_power_loss_shim MODULE ${CMAKE_CURRENT_LIST_DIR}/power_loss_shim.cpp)
target_link_libraries(olmo_power_loss_shim PRIVATE ${CMAKE_DL_LIBS})
# Preloaded into the sanitizer builds' binaries too: not instrumented itself (the test sets
# ASAN_OPTIONS=verify_asan_link_order=0 so ASan accepts a library loaded before its runtime).
target_compile_options(olmo_power_loss_shim PRIVATE -fno-sanitize=all)
target_link_options(olmo_power_loss_shim PRIVATE -fno-sanitize=all)
olmo_py_test(ckpt_power_loss ${CMAKE_CURRENT_LIST_DIR}/power_loss_test.py)
set_property(TEST ckpt_power_loss APPEND PROPERTY ENVIRONMENT
             "OLMO_PL_SHIM=$<TARGET_FILE:olmo_power_loss_shim>")
# 30 s on quiet 2 cores before the async leg; 71-77 s with it at load ~15.
set_tests_properties(ckpt_power_loss PROPERTIES LABELS ckpt TIMEOUT 300)
if(MPIEXEC_EXECUTABLE)  # the 2-rank recording (else announced NOT RUN)
  set_property(TEST ckpt_power_loss APPEND PROPERTY ENVIRONMENT "OLMO_MPIRUN=${MPIEXEC_EXECUTABLE}")
  set_tests_properties(ckpt_power_loss PROPERTIES RESOURCE_LOCK mpi)
endif()
