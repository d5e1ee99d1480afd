"""Tokenization for the tiny BERT: a lower-casing whitespace tokenizer over vocab.txt.

BERT's own tokenizer splits punctuation and then word pieces; the synthetic
sentences here are lower-case words separated by spaces, all in the
vocabulary, so splitting on whitespace is the whole job. Unknown words still
map to [UNK], as BERT's did.
"""
import collections

UNK_TOKEN = "[UNK]"


def load_vocab(vocab_file):
  """Reads vocab.txt into an OrderedDict token -> id (the id is the line number)."""
  vocab = collections.OrderedDict()
  with open(vocab_file, encoding="utf-8") as reader:
    for index, line in enumerate(reader):
      token = line.strip()
      if token:
        vocab[token] = index
  return vocab


def whitespace_tokenize(text):
  """Splits on runs of whitespace; an empty or blank text gives no tokens."""
  return text.strip().split()


class FullTokenizer(object):
  """Lower-cases and splits text, and maps tokens to ids and back.

  Args:
    vocab_file: path of vocab.txt.
    do_lower_case: lower-case the text first (the vocabulary is lower case).
  """

  def __init__(self, vocab_file, do_lower_case=True):
    self.vocab = load_vocab(vocab_file)
    self.inv_vocab = {index: token for token, index in self.vocab.items()}
    self.do_lower_case = do_lower_case

  def tokenize(self, text):
    if self.do_lower_case:
      text = text.lower()
    return [token if token in self.vocab else UNK_TOKEN
            for token in whitespace_tokenize(text)]

  def convert_tokens_to_ids(self, tokens):
    return [self.vocab.get(token, self.vocab[UNK_TOKEN]) for token in tokens]

  def convert_ids_to_tokens(self, ids):
    return [self.inv_vocab[index] for index in ids]
