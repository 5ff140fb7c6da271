"""ALBERT's tokenizer: ALBERT's text preprocessing, then a SentencePiece unigram model with ALBERT's special ids.

Ids 0-4 are `<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]` in every model this module accepts, the layout of the
official `30k-clean.model`. The committed Austen model (`data/austen/spiece.model`, 8000 pieces) is rebuilt with
`albert-mini tokenizer train --vocab-size 8000 --out data/austen/spiece.model --overwrite` (albert_mini/commands/
tokenizer.py; `train` writes only where --out says, and replaces an existing file only with --overwrite).

Parity with Hugging Face: `transformers.AlbertTokenizer.from_pretrained(folder)`, with the model copied to
`folder/spiece.model`, gives the same ids (tests/text/test_tokenizer.py). Load it with `from_pretrained(folder)`:
`AlbertTokenizer(vocab_file=...)` in transformers 5.x ignores a self-trained model's pieces and returns `<unk>`
ids. Pass `return_token_type_ids=True` to get token types from HF 5.x. Three documented differences:
- When two segmentations have exactly the same score, SentencePiece and HF's Unigram may pick different ones:
  "m---" is "m" "--" "-" here and "m" "-" "--" in HF. On the Austen corpus this happens in 1 of 32,840 sentences.
- HF finds special tokens written in raw text ("[MASK]" becomes id 4); here text is always just text, and
  special ids are only ever inserted by `encode_pair` / `__call__`.
- ALBERT's original code (and HF 4.x's slow tokenizer) re-split a piece ending in "digit," so that the comma
  becomes its own piece. HF 5.23's AlbertTokenizer does not, so neither does this module. The Austen vocabulary
  has no piece ending in "digit," so the quirk could not change its ids anyway (a test checks this).
"""

from __future__ import annotations

import io
import string
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import sentencepiece as spm

from ..errors import UserError
from ..paths import DATA_ROOT, MANIFEST, recorded_path, sha256_file, verified_path
from ..safe_files import atomic_write_bytes, atomic_write_text, update_manifest
from ..specials import CLS_ID, MASK_ID, PAD_ID, SEP_ID, SPECIAL_PIECES, UNK_ID
from .corpus import load_corpus, load_text_files

if TYPE_CHECKING:  # (imported where a batch is padded: preparing text needs no torch)
    import torch

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["DEFAULT_DIR", "Tokenizer", "WORD_BOUNDARY", "is_word_start", "preprocess_text", "train_sentencepiece",
           "training_texts", "truncate_longest_first", "truncate_pair"]

WORD_BOUNDARY = "\u2581"  # SentencePiece's "▁": the piece starts after a space
DEFAULT_DIR = DATA_ROOT / "austen"
TRAIN_COMMAND = "albert-mini tokenizer train --vocab-size 8000 --out data/austen/spiece.model --overwrite"
_PUNCTUATION = set(string.punctuation)
_WORD_CHARS = set(string.ascii_lowercase) | _PUNCTUATION


class TokenizerError(UserError, ValueError):
    """A tokenizer file or input that cannot be used; the message names the problem and the fix."""


def preprocess_text(text: str) -> str:
    """ALBERT's preprocessing: `` and '' to ", NFKD, drop combining marks (accents), lower-case, collapse whitespace."""
    text = text.replace("``", '"').replace("''", '"')
    if not text.isascii():  # ASCII is its own NFKD form and has no combining marks: most text skips this loop
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(text.lower().split())


def preprocess_with_origins(text: str) -> tuple[str, list[int], list[int]]:
    """`preprocess_text(text)` and, for each of its characters, the span [start, end) of `text` it came from.

    The steps of `preprocess_text` are replayed one character at a time so that every output character keeps
    the index of its source: a `` or '' pair gives one '"' spanning both quotes, a character that NFKD expands
    ("\ufb01" -> "fi") gives several characters with the same span, a combining accent that is dropped widens
    the span of the character before it (so "e\u0301" maps back whole), and a run of whitespace gives one space
    spanning the first whitespace character.
    """
    chars: list[str] = []
    starts: list[int] = []  # chars[k] came from text[starts[k]:ends[k]]
    ends: list[int] = []
    i = 0
    while i < len(text):
        if text[i:i + 2] in ("``", "''"):
            chars.append('"'), starts.append(i), ends.append(i + 2)
            i += 2
            continue
        char = text[i]
        kept = char if char < "\x80" else [  # ASCII is its own NFKD form and has no combining marks
            c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)]
        for c in kept:
            chars.append(c), starts.append(i), ends.append(i + 1)
        if not kept and ends and ends[-1] == i:
            ends[-1] = i + 1  # a lone accent belongs to the letter it sits on
        i += 1
    # Lower-case the whole string (Greek final sigma depends on context). Once NFKD has split off the marks, no
    # character in Unicode lower-cases to several ("İ" is "I" + a dropped dot), so positions still line up; the
    # comparison with preprocess_text below would catch it if a future Unicode version broke that.
    chars = list("".join(chars).lower())
    out: list[int] = []  # indices into chars of the characters that survive whitespace collapsing
    space_at: int | None = None
    for k, char in enumerate(chars):
        if char.isspace():
            if out and space_at is None:
                space_at = k  # a run of whitespace becomes one space, kept only if text follows
            continue
        if space_at is not None:
            out.append(space_at)
            space_at = None
        out.append(k)
    norm = "".join(" " if chars[k].isspace() else chars[k] for k in out)
    expected = preprocess_text(text)
    if norm != expected:
        diverge = next((k for k, (a, b) in enumerate(zip(norm, expected)) if a != b), min(len(norm), len(expected)))
        raise TokenizerError(
            f"cannot align preprocessed text with its source: replaying preprocess_text character by character "
            f"gives {norm[max(0, diverge - 10):diverge + 10]!r} where preprocess_text gives "
            f"{expected[max(0, diverge - 10):diverge + 10]!r} (character {diverge}); report this text as a bug"
        )
    return norm, [starts[k] for k in out], [ends[k] for k in out]


def is_word_start(piece: str) -> bool:
    """ALBERT's whole-word rule (create_pretraining_data.py): does this piece begin a new word?

    True when the piece starts with "▁" (it follows a space) or "<", is a single punctuation character, or
    holds any character other than a-z and punctuation (so digits and non-English letters each start a word).
    """
    if piece.startswith((WORD_BOUNDARY, "<")) or piece in _PUNCTUATION:
        return True
    return not all(c.lower() in _WORD_CHARS for c in piece)


class Tokenizer:
    """A SentencePiece model with ALBERT's special ids, preprocessing and `[CLS] A [SEP] B [SEP]` layout.

    `word_start[i]` (a bool array over the vocabulary) says whether piece i begins a word, by ALBERT's rule
    (`is_word_start`); every special id is True. `special_ids` holds the control pieces and <unk> (0-4).
    """

    def __init__(self, processor: spm.SentencePieceProcessor, path: str = "<memory>"):
        self.sp, self.path = processor, path
        self.vocab_size: int = processor.get_piece_size()
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID
        self._check_special_ids()
        self.special_ids = frozenset(
            i for i in range(self.vocab_size) if processor.is_control(i) or processor.is_unknown(i)
        )
        pieces = [processor.id_to_piece(i) for i in range(self.vocab_size)]
        # Special ids count as word starts so that masking never glues them to a neighbouring word.
        self.word_start = np.array([i in self.special_ids or is_word_start(p) for i, p in enumerate(pieces)])

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_file(cls, path: str | Path) -> Tokenizer:
        """Load a SentencePiece `.model` file (ours or ALBERT's official `30k-clean.model`)."""
        path = Path(path)
        if path.is_dir():
            raise TokenizerError(f"tokenizer model {path} is a folder; pass the .model file itself (the one "
                                 "`albert-mini tokenizer train` wrote)")
        if not path.is_file():
            raise TokenizerError(f"tokenizer model {path} does not exist; train it with `albert-mini tokenizer train "
                                 f"--text YOUR_TEXT --out {path}` (the Austen model: "
                                 f"`{TRAIN_COMMAND}`)")
        processor = spm.SentencePieceProcessor()
        try:  # read here, not by SentencePiece: its C++ side cannot take a file name that is not UTF-8
            processor.load_from_serialized_proto(path.read_bytes())
        except (RuntimeError, TypeError) as error:
            raise TokenizerError(f"{path} is not a SentencePiece model ({error}); pass a .model file") from None
        return cls(processor, str(path))

    @classmethod
    def from_bytes(cls, model: bytes) -> Tokenizer:
        """A tokenizer from the bytes of a `.model` file (what `train_sentencepiece` returns)."""
        try:
            return cls(spm.SentencePieceProcessor(model_proto=model))
        except (OSError, RuntimeError) as error:
            raise TokenizerError(f"these bytes are not a SentencePiece model ({error})") from None

    @classmethod
    def default(cls) -> Tokenizer:
        """The committed 8000-piece Austen model, after checking its sha256 against data/austen/SHA256SUMS."""
        return cls.from_file(verified_path(DEFAULT_DIR, "spiece.model", TRAIN_COMMAND, TokenizerError))

    def file_reference(self) -> dict | None:
        """The model file's path and sha256 (what a run records of its tokenizer), the path relative to the
        repository root when the file lies inside it, else as given (`paths.recorded_path`); None if not from a
        file."""
        path = Path(self.path)
        if not path.is_file():
            return None
        return {"path": recorded_path(path), "sha256": sha256_file(path)}

    def _check_special_ids(self) -> None:
        sp = self.sp
        wrong = [p for p, i in SPECIAL_PIECES.items() if i >= self.vocab_size or sp.id_to_piece(i) != p]
        if wrong:
            missing = [p for p in wrong if sp.piece_to_id(p) == sp.unk_id() and p != sp.id_to_piece(sp.unk_id())]
            where = [f"{p} at {sp.piece_to_id(p)}" for p in wrong if p not in missing]
            found = "; ".join(filter(None, [", ".join(where), f"missing: {' '.join(missing)}" if missing else ""]))
            head = " ".join(sp.id_to_piece(i) for i in range(min(5, self.vocab_size)))
            raise TokenizerError(
                f"{self.path} does not use ALBERT's special ids <pad>=0 <unk>=1 [CLS]=2 [SEP]=3 [MASK]=4 "
                f"(ids 0-4 hold {head}; {found}); retrain it with `{TRAIN_COMMAND}` or SentencePiece flags "
                f"pad_id=0 unk_id=1 bos_id=-1 eos_id=-1 control_symbols=[CLS],[SEP],[MASK]"
            )

    # ------------------------------------------------------------------ pieces and ids
    def tokenize(self, text: str) -> list[str]:
        """The pieces of `text` after ALBERT's preprocessing (no special pieces)."""
        return self.sp.encode(preprocess_text(text), out_type=str)

    def encode(self, text: str) -> list[int]:
        """The ids of `text` after ALBERT's preprocessing (no special ids)."""
        if not isinstance(text, str):
            raise TokenizerError(f"encode() takes a str, got {type(text).__name__}; use __call__ for batches")
        return self.sp.encode(preprocess_text(text))

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """`encode(text)` and, for each id, the span (start, end) of the ORIGINAL `text` its piece covers.

        Spans leave out the space that a "▁" piece stands for, so a lone "▁" piece (SentencePiece puts one
        before characters it must spell separately, such as unknown ones) gets an empty span (p, p) at the
        character that follows it. Pieces cut from one source character (NFKD turns "\ufb01" into "fi") share
        that character's span.
        """
        if not isinstance(text, str):
            raise TokenizerError(f"encode_with_offsets() takes a str, got {type(text).__name__}")
        norm, starts, ends = preprocess_with_origins(text)
        proto = self.sp.encode(norm, return_type="proto")
        # SentencePiece reports UTF-8 byte offsets into `norm`; map each character boundary byte to its index.
        char_at_byte: dict[int, int] = {}
        n_bytes = 0
        for index, char in enumerate(norm):
            char_at_byte[n_bytes] = index
            n_bytes += len(char.encode("utf-8"))
        char_at_byte[n_bytes] = len(norm)
        utf8 = norm.encode("utf-8")
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        for piece in proto.pieces:
            if piece.begin not in char_at_byte or piece.end not in char_at_byte or \
                    utf8[piece.begin:piece.end].decode("utf-8") != piece.surface:
                raise TokenizerError(
                    f"SentencePiece gave piece {piece.piece!r} the byte span {piece.begin}:{piece.end}, which is not "
                    f"its surface {piece.surface!r} in the preprocessed text; this sentencepiece version reports "
                    f"offsets differently, so encode_with_offsets cannot be used with it"
                )
            begin, end = char_at_byte[piece.begin], char_at_byte[piece.end]
            if begin < end and norm[begin] == " ":
                begin += 1  # the space "▁" stands for is not part of the word
            if begin < end:
                offsets.append((starts[begin], ends[end - 1]))
            else:
                where = starts[begin] if begin < len(norm) else len(text)
                offsets.append((where, where))
            ids.append(piece.id)
        return ids, offsets

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, leaving out special ids (<pad>, <unk>, [CLS], [SEP], [MASK])."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)  # a tensor or an array, else any iterable
        self._check_ids(ids)
        return self.sp.decode([i for i in ids if i not in self.special_ids])

    def id_to_piece(self, i: int) -> str:
        self._check_ids([i])
        return self.sp.id_to_piece(int(i))

    def piece_to_id(self, piece: str) -> int:
        """The id of a piece; unlike SentencePiece, an unknown piece is an error, not <unk>'s id."""
        i = self.sp.piece_to_id(piece)
        if i == self.unk_id and piece != "<unk>":
            raise TokenizerError(f"piece {piece!r} is not in the vocabulary of {self.vocab_size} pieces")
        return i

    def _check_ids(self, ids: list[int]) -> None:
        bad = [i for i in ids if not 0 <= int(i) < self.vocab_size]
        if bad:
            raise TokenizerError(f"id(s) {bad[:5]} outside the vocabulary 0..{self.vocab_size - 1}")

    # ------------------------------------------------------------------ model inputs
    def encode_pair(self, a: str | Sequence[int], b: str | Sequence[int] | None = None,
                    max_length: int | None = None) -> dict[str, list[int]]:
        """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` with token types 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`.

        `a` and `b` are text or already-encoded ids. With `max_length`, tokens are cut from the ends of the
        segments, the longer one first (`truncate_pair`, HF's `truncation=True`). max_length must leave room
        for one token per segment: at least 3 for a single segment, 5 for a pair.
        """
        ids_a = self.encode(a) if isinstance(a, str) else self._as_ids(a)
        ids_b = None if b is None else (self.encode(b) if isinstance(b, str) else self._as_ids(b))
        n_special = 2 if ids_b is None else 3
        if max_length is not None:
            if max_length < n_special + (1 if ids_b is None else 2):
                need = "3 for one segment" if ids_b is None else "5 for a pair"
                raise TokenizerError(f"max_length={max_length} leaves no room for the text; use at least {need}")
            ids_a, ids_b = truncate_pair(ids_a, ids_b, max_length - n_special)
        input_ids = [self.cls_id, *ids_a, self.sep_id]
        token_type_ids = [0] * len(input_ids)
        if ids_b is not None:
            input_ids += [*ids_b, self.sep_id]
            token_type_ids += [1] * (len(ids_b) + 1)
        return {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": [1] * len(input_ids)}

    def _as_ids(self, ids: Sequence[int]) -> list[int]:
        ids = [int(i) for i in ids]
        self._check_ids(ids)
        return ids

    def __call__(self, texts: str | Sequence[str], texts_b: str | Sequence[str] | None = None,
                 max_length: int | None = None, padding: bool | str = True) -> dict[str, torch.Tensor]:
        """Encode a batch into LongTensors (B, T): input_ids, token_type_ids, attention_mask.

        padding=True pads to the longest sequence, "max_length" to max_length, False requires equal lengths.
        Padding uses <pad> (id 0), token type 0 and attention 0.
        """
        texts = [texts] if isinstance(texts, str) else list(texts)
        if texts_b is not None:
            texts_b = [texts_b] if isinstance(texts_b, str) else list(texts_b)
            if len(texts_b) != len(texts):
                raise TokenizerError(f"texts has {len(texts)} items but texts_b has {len(texts_b)}; pair them up")
        if not texts:
            raise TokenizerError("empty batch: pass at least one text")
        if padding not in (True, False, "max_length"):
            raise TokenizerError(f"padding={padding!r}; use True (to the longest), 'max_length' or False")
        if padding == "max_length" and max_length is None:
            raise TokenizerError("padding='max_length' needs max_length")
        rows = [self.encode_pair(a, None if texts_b is None else texts_b[i], max_length) for i, a in enumerate(texts)]
        lengths = {len(r["input_ids"]) for r in rows}
        if padding is False and len(lengths) > 1:
            raise TokenizerError(f"sequences have lengths {sorted(lengths)}; pass padding=True to pad them")
        from .padding import pad_batch  # (torch: this module loads without it, as `albert-mini prepare` runs)

        columns = {key: [r[key] for r in rows] for key in ("input_ids", "token_type_ids")}
        batch = pad_batch(columns, max_length if padding == "max_length" else None)
        return {key: batch[key] for key in ("input_ids", "token_type_ids", "attention_mask")}

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"Tokenizer({self.path!r}, vocab_size={self.vocab_size})"


def truncate_pair(ids_a: list[int], ids_b: list[int] | None, budget: int) -> tuple[list[int], list[int] | None]:
    """Cut segments from their ends to fit `budget` tokens together, as HF's "longest_first" does.

    Only the longer segment is cut while that suffices; otherwise both get budget // 2 and the originally
    longer one (B on a tie) keeps the odd token. ALBERT's pretraining `truncate_seq_pair`, which removes one
    token at a time from the longer side, gives the same lengths except which side keeps an odd token.
    """
    if ids_b is None:
        return ids_a[:budget], None
    len_a, len_b = len(ids_a), len(ids_b)
    if len_a + len_b > budget:
        a_longer = len_a > len_b
        short, long = (len_b, len_a) if a_longer else (len_a, len_b)
        long = max(short, budget - short)
        if short + long > budget:
            short, long = budget // 2, budget // 2 + budget % 2
        len_a, len_b = (long, short) if a_longer else (short, long)
    return ids_a[:len_a], ids_b[:len_b]


def truncate_longest_first(ids_a: Sequence[int], ids_b: Sequence[int], max_total: int) -> tuple[list[int], list[int]]:
    """ALBERT's fine-tuning rule (`_truncate_seq_pair` in `classifier_utils.py`, from BERT): while the pair is too
    long, drop the last token of the longer segment (of B on a tie). New lists; the inputs are left as they are.

    `truncate_pair` (HF's "longest_first", what `encode_pair` uses) keeps the same total and almost always the same
    lengths: the two differ only in which segment keeps the odd token when both have to be cut.
    """
    len_a, len_b = len(ids_a), len(ids_b)
    while len_a + len_b > max_total:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return list(ids_a[:len_a]), list(ids_b[:len_b])


# --------------------------------------------------------------------------- training
def train_sentencepiece(texts: Iterable[str], vocab_size: int = 8000, seed: int = 0) -> bytes:
    """Train a unigram SentencePiece model with ALBERT's special ids on `texts`; return the `.model` bytes.

    Each text is one training line (we pass sentences), preprocessed with `preprocess_text`. Deterministic:
    fixed seed, one thread, every line used in the given order, no shuffling.
    """
    lines = [line for line in (preprocess_text(t) for t in texts) if line]
    if not lines:
        raise TokenizerError("no training text: every input line is empty after preprocessing")
    longest = max(len(line.encode("utf-8")) for line in lines)
    model = io.BytesIO()
    spm.set_random_generator_seed(seed)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=model, model_type="unigram", vocab_size=vocab_size,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
            character_coverage=1.0, num_threads=1, input_sentence_size=0, shuffle_input_sentence=False,
            max_sentence_length=max(longest, 4192), minloglevel=2,
        )
    except RuntimeError as error:
        raise TokenizerError(f"SentencePiece training failed: {error} (a smaller --vocab-size may fit the text)") \
            from None
    return model.getvalue()


def training_texts(corpus: str = "austen", text_paths: Sequence[str] | None = None) -> list[str]:
    """The training lines: sentences of the corpus's train split, or of the user's text files."""
    documents = load_text_files(text_paths) if text_paths else load_corpus(corpus, "train")
    return [sentence for doc in documents for sentence in doc.sentences()]


def vocab_path(out: str | Path) -> Path:
    """The readable `.vocab` file written beside a `.model` file."""
    out = Path(out)
    return out.with_name(out.name + ".vocab") if out.suffix == ".vocab" else out.with_suffix(".vocab")


def is_shipped_model(out: str | Path) -> bool:
    """Whether `out` is the shipped Austen tokenizer, data/austen/spiece.model (its manifest lists it)."""
    return Path(out).resolve() == (DEFAULT_DIR / "spiece.model").resolve()


def save_model(model: bytes, out: str | Path) -> Path:
    """Write `out` (.model) and a readable `.vocab` (piece TAB score); for the shipped Austen tokenizer, also its two
    lines of data/austen/SHA256SUMS (the other lines kept as they are). No other SHA256SUMS is ever touched: a
    manifest belongs to the command that writes the files it lists.

    Each file is written atomically (temp file, fsync, rename): a crash or a full disk leaves the old file whole.
    Whether `out` may be written at all is the caller's to check (`destinations` and the write rule).
    """
    out = Path(out)
    atomic_write_bytes(out, model)
    sp = spm.SentencePieceProcessor(model_proto=model)
    vocab = "".join(f"{sp.id_to_piece(i)}\t{sp.get_score(i):g}\n" for i in range(sp.get_piece_size()))
    atomic_write_text(vocab_path(out), vocab)
    if is_shipped_model(out):
        update_manifest(out.parent, [out.name, vocab_path(out).name])
    return out


def destinations(out: str | Path) -> list[tuple[str, Path]]:
    """(flag, path) of every file `save_model(_, out)` writes: the model, its .vocab, and for the shipped Austen
    tokenizer its manifest."""
    out = Path(out)
    files = [("--out", out), ("--out (its .vocab file)", vocab_path(out))]
    return files + ([("--out (its folder's manifest)", out.parent / MANIFEST)] if is_shipped_model(out) else [])

