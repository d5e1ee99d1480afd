"""Writes vocab.txt and bert_config.json for the tiny BERT of this directory.

Run once, offline; both outputs are committed:

    python examples/tpu_bert/make_vocab.py

vocab.txt is BERT's format: one token a line, the line number is the id, the
special tokens first ([PAD] must be id 0: padded positions are id 0 and have
input_mask 0). The words are the ones synthetic_data.py builds its sentences
from, so every token a program sees is in the vocabulary. bert_config.json is
a BertConfig small enough to train in seconds on a CPU, its vocab_size the
vocabulary's.
"""
import json
import os

import synthetic_data

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# A transformer a CPU trains in a few seconds: 2 layers of 32 units, 2 heads.
TINY_CONFIG = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 32,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}


def main():
  words = sorted(set(synthetic_data.all_words()))
  tokens = SPECIAL_TOKENS + words
  with open(os.path.join(HERE, "vocab.txt"), "w") as f:
    f.write("".join(token + "\n" for token in tokens))
  config = dict(TINY_CONFIG, vocab_size=len(tokens))
  with open(os.path.join(HERE, "bert_config.json"), "w") as f:
    json.dump(config, f, indent=2, sort_keys=True)
    f.write("\n")
  print(f"wrote {len(tokens)} tokens ({len(words)} words) and bert_config.json to {HERE}")


if __name__ == "__main__":
  main()
