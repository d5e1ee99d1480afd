"""Synthetic English-like sentences for the tiny BERT programs, from a seeded random.Random.

Real BERT programs read Wikipedia (pre-training) and a GLUE task (fine-tuning);
these programs must run offline, in seconds, and give the same data on every
machine and Python version, so they draw short sentences from a fixed grammar
with `random.Random(seed)` (whose choice/random/shuffle sequences are the same
for a given seed across CPython 3 releases).

A sentence is "<subject> <verb> [<adverb>] <adjective> [<time>]", e.g. "the
dog looked really happy today". The sentiment task labels a sentence 1 when
its adjective is a positive one, 0 when negative.
"""
import collections

SUBJECTS = ["the cat", "a dog", "my friend", "the teacher", "our team",
            "this movie", "that book", "the weather"]
VERBS = ["was", "is", "seemed", "looked", "felt"]
ADVERBS = ["very", "quite", "really", "so"]
POSITIVE = ["good", "great", "happy", "nice", "bright"]
NEGATIVE = ["bad", "poor", "sad", "awful", "dull"]
TIMES = ["today", "again", "at night", "in the morning", "all week"]

# A classification example, as BERT's run_classifier.InputExample.
InputExample = collections.namedtuple("InputExample", ["guid", "text_a", "text_b", "label"])


def all_words():
  """Every word a sentence may contain (make_vocab.py's vocabulary)."""
  words = []
  for phrases in (SUBJECTS, VERBS, ADVERBS, POSITIVE, NEGATIVE, TIMES):
    for phrase in phrases:
      words.extend(phrase.split())
  return words


def sentence(rng, positive=None):
  """One sentence; its adjective positive when `positive`, negative when not, either when None."""
  if positive is None:
    positive = rng.random() < 0.5
  words = [rng.choice(SUBJECTS), rng.choice(VERBS)]
  if rng.random() < 0.5:
    words.append(rng.choice(ADVERBS))
  words.append(rng.choice(POSITIVE if positive else NEGATIVE))
  if rng.random() < 0.5:
    words.append(rng.choice(TIMES))
  return " ".join(words)


def documents(rng, num_documents, sentences_per_document=4):
  """Documents (lists of sentences) for masked-LM pre-training."""
  return [[sentence(rng) for _ in range(sentences_per_document)]
          for _ in range(num_documents)]


def sentiment_examples(rng, num_examples, set_type):
  """`num_examples` InputExamples of the sentiment task, half of each label in expectation."""
  examples = []
  for i in range(num_examples):
    label = "1" if rng.random() < 0.5 else "0"
    examples.append(InputExample(guid=f"{set_type}-{i}",
                                 text_a=sentence(rng, positive=label == "1"),
                                 text_b=None, label=label))
  return examples
