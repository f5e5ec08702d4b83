"""Would Hugging Face's ``tokenizers`` (words and their offsets, in Rust, over a batch) analyse
abstracts faster than tagger's own analyser? Measured before choosing it.

    pip install tokenizers
    python tests/benchmarks/bench_tokenizers.py ../shared/bench/preprint-pile-2025.jsonl.gz [--n 50000]
                                                [--repeats 3]

On the first ``--n`` abstracts of a JSON-lines file (title and abstract, as tagger reads
them), medians over ``--repeats`` runs, in one process:

* ``tokenizers``: a ``WordLevel`` tokenizer whose vocabulary is the shipped model's words
  and the stop words, normalised as tagger analyses (NFKC, lower case, LaTeX commands and
  links removed), split at whitespace and then at what is not a word character, run by
  ``encode_batch_fast`` (Rust, on every core), the ids of each text read back: the words
  looked up, no pairs, no matrix;
* the same with lower case alone (the least a tokenizer could do);
* tagger's ``words`` of each text (the analyser's split, in Python, no lookup);
* tagger's whole ``transform_with_evidence`` (words split and looked up, pairs found, the
  TF-IDF matrix and the evidence made): what the tokenizer would replace, and more.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def texts_of(path: Path, n: int) -> list[str]:
    from tagger.reading import document

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as stream:
        rows = [json.loads(line) for line in itertools.islice(stream, n)]
    return [document(row["abstract"], row.get("title") or "") for row in rows]


def tokenizer(words: list[str], lower_case_only: bool = False):
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel

    from tagger.features import STOP_WORDS

    vocabulary = {word: i for i, word in enumerate(dict.fromkeys([*words, *sorted(STOP_WORDS), "[UNK]"]))}
    made = Tokenizer(WordLevel(vocabulary, unk_token="[UNK]"))
    steps = [normalizers.Lowercase()]
    if not lower_case_only:
        steps = [
            normalizers.NFKC(),
            normalizers.Lowercase(),
            normalizers.Replace(Regex(r"\\[a-z]+"), " "),
            normalizers.Replace(Regex(r"(?:https?://|www\.)\S+|\S+@\S+"), " "),
        ]
    made.normalizer = normalizers.Sequence(steps)
    made.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(r"\W+"), behavior="removed")]
    )
    return made


def timed(work, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pile", type=Path)
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import tagger
    from tagger.features import words

    texts = texts_of(args.pile, args.n)
    model = tagger.load_model(ROOT / "models")
    single = [term for term in model.vocabulary if " " not in term]
    full, lower = tokenizer(single), tokenizer(single, lower_case_only=True)
    model.features.transform_with_evidence(texts[:1000])  # (the lookup tables built once)

    def encoded(made):
        return lambda: [encoding.ids for encoding in made.encode_batch_fast(texts, add_special_tokens=False)]

    figures = {
        "tokenizers, as tagger normalises (words looked up)": timed(encoded(full), args.repeats),
        "tokenizers, lower case alone (words looked up)": timed(encoded(lower), args.repeats),
        "tagger's words (split only)": timed(lambda: [words(text) for text in texts], args.repeats),
        "tagger's transform_with_evidence (all of it)": timed(
            lambda: model.features.transform_with_evidence(texts), args.repeats
        ),
    }
    whole = figures["tagger's transform_with_evidence (all of it)"]
    print(f"{len(texts):,} abstracts of {args.pile.name}, median of {args.repeats}:")
    for name, seconds in figures.items():
        print(f"  {name:55s} {seconds:6.2f} s  ({seconds / whole:.2f}x tagger's whole transform)")


if __name__ == "__main__":
    main()
