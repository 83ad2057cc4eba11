# Rendezvous security (issue 37 item 5): our binaries open no listening socket in a 2-process
# `olmo launch` (Open MPI's TCP BTL left out), and with the BTL on every rank listener is in the
# port window given to Open MPI; junk from a foreign client does not stop the job. mpirun:
# RESOURCE_LOCK mpi; binds a window of ports: ports. Measured 12 s on 2 busy cores.
olmo_mpi_py_test(launch_listen ${CMAKE_CURRENT_LIST_DIR}/listen_test.py)
set_tests_properties(launch_listen PROPERTIES TIMEOUT 90 RESOURCE_LOCK "mpi;ports"
                     LABELS "launch;dist")
