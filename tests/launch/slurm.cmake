# `olmo launch` under a real Slurm (issue 39): each test starts a one-node Slurm from Debian's
# slurm-wlm and munge in a temp dir (slurm_util.py; its own munge socket, slurm.conf, and two free
# ports for slurmctld / slurmd) and stops it at the end; skipped (exit 77) naming the package where
# it is not installed. srun --mpi=pmix starts the ranks: RESOURCE_LOCK mpi; the daemons bind TCP
# ports: RESOURCE_LOCK ports. Measured on 2 busy cores: static 14-17 s, elastic 17-23 s, preempt
# (3 requeues) 43-47 s (each requeue waits AuthInfo cred_expire=5 s before the job starts again).
olmo_py_test(launch_slurm_static ${CMAKE_CURRENT_LIST_DIR}/slurm_static_test.py)
olmo_py_test(launch_slurm_elastic ${CMAKE_CURRENT_LIST_DIR}/slurm_elastic_test.py)
olmo_py_test(launch_slurm_preempt ${CMAKE_CURRENT_LIST_DIR}/slurm_preempt_test.py)
set_tests_properties(launch_slurm_static PROPERTIES TIMEOUT 120)
set_tests_properties(launch_slurm_elastic PROPERTIES TIMEOUT 180)
set_tests_properties(launch_slurm_preempt PROPERTIES TIMEOUT 300)
# Two slurmd on this machine (n1, n2), node n2 killed whole mid-step: relaunched on n1 alone.
# Measured 43 s (27 s of it from the loss to the end: Slurm notices the node after SlurmdTimeout).
olmo_py_test(launch_slurm_nodes ${CMAKE_CURRENT_LIST_DIR}/slurm_nodes_test.py)
set_tests_properties(launch_slurm_nodes PROPERTIES TIMEOUT 200)
set_tests_properties(launch_slurm_static launch_slurm_elastic launch_slurm_preempt launch_slurm_nodes
                     PROPERTIES RESOURCE_LOCK "mpi;ports" LABELS "launch;slurm")
# Preemption without a scheduler (issue 37 item 3): SIGTERM to `olmo train`, to `olmo launch
# --np 2` and to one of its ranks: exit 4 with a checkpoint of the stop step, the same command
# resumes bitwise equal. mpirun: RESOURCE_LOCK mpi. Measured 11-16 s; 22-47 s at load 14-17
# (one run past the former 90 s limit there, issue 45).
olmo_mpi_py_test(launch_preempt ${CMAKE_CURRENT_LIST_DIR}/preempt_test.py)
set_tests_properties(launch_preempt PROPERTIES TIMEOUT 180 LABELS "launch;dist")
