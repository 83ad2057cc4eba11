# `olmo launch` (issue 21): bad input and limits, and the resize campaign (seeded world sizes
# 1-4 and kill -9s through the launcher, bitwise equal to the never-resized run), on loopback.
olmo_mpi_py_test(dist_launch ${CMAKE_CURRENT_LIST_DIR}/launch_test.py)
olmo_mpi_py_test(dist_launch_campaign ${CMAKE_CURRENT_LIST_DIR}/launch_campaign_test.py)
set_tests_properties(dist_launch dist_launch_campaign PROPERTIES LABELS dist)
set_tests_properties(dist_launch PROPERTIES TIMEOUT 300)  # 26-45 s on a busy 2-core machine
# Hosts as network namespaces joined by a veth bridge, OpenMPI over TCP only; whole hosts killed
# inside a step and inside a checkpoint (at OLMO_TEST_HOLD points), then a second run whose link
# is cut and found by --stall-timeout (needs root: skipped with the reason, exit 77, where
# `ip netns add` is refused). It binds port 22 in each namespace and adds a bridge and routes
# to the root namespace: RESOURCE_LOCK ports too.
olmo_mpi_py_test(dist_launch_netns ${CMAKE_CURRENT_LIST_DIR}/launch_netns_test.py)
set_tests_properties(dist_launch_netns PROPERTIES RESOURCE_LOCK "mpi;ports" LABELS dist
                     TIMEOUT 900)  # 55 s on a quiet 2-core machine, 495-515 s at load 11-12
