"""Storage, normalization and the vocabulary shared by every part of gpuprice."""
