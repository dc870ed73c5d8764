"""The pipeline's stages, text to scores: inputs, tokens, encoder, embeddings, windows, token
filters, scored tokens, options and baseline rescaling."""
