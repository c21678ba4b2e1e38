# ctest cases that run `ppsim execute` on real Open MPI ranks (mpirun -np 2 and -np 4,
# oversubscribed on small machines), through tests/exec/mpi_test.sh.
set(PPSIM_MPI_TEST ${PROJECT_SOURCE_DIR}/tests/exec/mpi_test.sh)
foreach(schedule 1f1b zb-h1 zb-h2 interleaved-1f1b zb-v dualpipe-v)
  foreach(np 2 4)
    add_test(NAME "exec: ${schedule} on mpirun -np ${np}"
      COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> run ${schedule} ${np})
  endforeach()
endforeach()
add_test(NAME "exec: dualpipe on mpirun -np 4"
  COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> run dualpipe 4)
add_test(NAME "exec: zb-h1 on mpirun -np 2 predicted on costs calibrated on the ranks"
  COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> run zb-h1 2 --calibrate-on-ranks)
add_test(NAME "exec: zb-h1 on mpirun -np 2 with the seed's blocking sends"
  COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> run zb-h1 2 --comm-mode blocking)
# A sweep or plan shared among the ranks writes what one process does (ppsim/run/shared_work.hpp).
foreach(np 2 3)
  add_test(NAME "exec: mpirun -np ${np} ppsim sweep writes what one process does"
    COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> sweep ${np})
endforeach()
add_test(NAME "exec: mpirun -np 2 ppsim plan writes what one process does"
  COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> plan 2)
foreach(kind die hang seed-bug)
  add_test(NAME "exec: --fault ${kind}:1 is reported with exit 6, never hangs"
    COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> fault ${kind})
endforeach()
add_test(NAME "exec: a schedule file with a missing task is rejected before launch"
  COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> invalid
    ${PROJECT_SOURCE_DIR}/data/examples/schedules/bad-missing-task.csv 4)
add_test(NAME "exec: a deadlocking schedule file is rejected before launch"
  COMMAND ${PPSIM_MPI_TEST} $<TARGET_FILE:ppsim> invalid
    ${PROJECT_SOURCE_DIR}/tests/exec/deadlock-p2-m2.csv 4)
# A signal to `ppsim execute` stops mpirun and every rank (tests/exec/signal_test.sh).
foreach(sig TERM INT HUP)
  add_test(NAME "exec: SIG${sig} to ppsim execute stops mpirun and every rank within a second"
    COMMAND ${PROJECT_SOURCE_DIR}/tests/exec/signal_test.sh $<TARGET_FILE:ppsim> ${sig})
endforeach()
add_test(NAME "exec: when ppsim execute is killed, mpirun and every rank stop within 3 seconds"
  COMMAND ${PROJECT_SOURCE_DIR}/tests/exec/signal_test.sh $<TARGET_FILE:ppsim> KILL)
# Across hosts for real: network namespaces as hosts, TCP between them; skipped (77) where
# namespaces cannot be made (tests/exec/netns_test.sh).
add_test(NAME "exec: execute --hostfile over TCP between network namespaces, one host killed"
  COMMAND ${PROJECT_SOURCE_DIR}/tests/exec/netns_test.sh $<TARGET_FILE:ppsim>)
set_tests_properties("exec: execute --hostfile over TCP between network namespaces, one host killed"
  PROPERTIES SKIP_RETURN_CODE 77)
get_property(PPSIM_MPI_TESTS DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY TESTS)
foreach(t ${PPSIM_MPI_TESTS})
  if(t MATCHES "^exec: ")
    # RUN_SERIAL: the ranks want the cores to themselves; TIMEOUT: a hang fails, never blocks CI.
    set_tests_properties("${t}" PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE LABELS mpi)
  endif()
endforeach()
