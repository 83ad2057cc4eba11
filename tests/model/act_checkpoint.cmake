# Activation checkpointing: the trajectory test steps OLMo-core's AdamW (src/optim).
target_link_libraries(test_model_act_checkpoint PRIVATE olmo_optim)
