# README claims driven end to end (issue 35 item 6; inventory: docs/readme_claims.md):
#   data_claims_mix_census  `olmo data mix NAME --root DIR --census` against OLMo-core's
#                           DataMix.build paths and the files on disk (< 2 s)
olmo_py_test(data_claims_mix_census ${CMAKE_CURRENT_LIST_DIR}/claims_mix_census_test.py)
set_tests_properties(data_claims_mix_census PROPERTIES LABELS data TIMEOUT 60)
