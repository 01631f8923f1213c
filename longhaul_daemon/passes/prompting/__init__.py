"""What a model is shown in either model stage: messages as text, instructions, data blocks, budgets."""
