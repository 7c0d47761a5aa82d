"""Embedding providers behind one interface (`providers`), and the laptop's model in numpy
(`minilm`, its tokenizer `wordpiece`)."""
