"""The scoring stages: text, tokenisation, the encoder and its device, embeddings."""
