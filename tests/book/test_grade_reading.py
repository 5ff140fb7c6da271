"""What the grader reads from a sandbox is read defensively: regular files only, sizes and array headers checked
before anything is allocated, JSON bounded in size and depth, answers decoded as plain data only, names and
messages made printable and capped. Each hostile file here once stopped a whole class's grading."""

import json
import os
import threading
import zipfile

import numpy as np
import pytest

from albert_mini.book.answering import NotPlainData, Unsupported, _Encoder, decode_answer
from albert_mini.book.grade_reading import (
    MAX_ARRAY_ELEMENTS,
    MESSAGE_LIMIT,
    Unreadable,
    capped,
    clean_report,
    printable,
    read_arrays,
    read_json,
    read_regular,
)


def npy_bytes(header: str, body: bytes) -> bytes:
    """An .npy file with a header of our choosing (what a hostile kernel can write)."""
    text = header.encode("latin1")
    text += b" " * (63 - (len(text) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + body


def npz_with(path, members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_honest_answer_files_read_back_as_written(tmp_path):
    arrays = {"v0": np.arange(6, dtype=np.int64).reshape(2, 3), "v1": np.asfortranarray(np.ones((3, 2))),
              "v2": np.array([True, False])}
    np.savez(tmp_path / "a.npz", **arrays)
    read = read_arrays(tmp_path / "a.npz")
    assert sorted(read) == ["v0", "v1", "v2"]
    for key, array in arrays.items():
        assert read[key].dtype == array.dtype and np.array_equal(read[key], array)
    np.savez(tmp_path / "empty.npz")
    assert read_arrays(tmp_path / "empty.npz") == {}
    (tmp_path / "a.json").write_text(json.dumps({"records": [{"value": {"int": 3}}]}))
    assert read_json(tmp_path / "a.json") == {"records": [{"value": {"int": 3}}]}


@pytest.mark.parametrize("attack, reason", [
    ("a header claiming 10^13 floats", "over the limit"),
    ("an .npy saved as .npz", "not an .npz"),
    ("a broken zip", "not an .npz"),
    ("a void dtype", "dtype"),
    ("an object dtype", "dtype"),
    ("a key overriding the grader's inputs", "not one of the answer's"),
    ("a compressed member", "compressed"),
    ("fewer bytes than declared", "declares"),
    ("more numbers than an answer holds", "over the limit"),
])
def test_hostile_array_files_are_refused_before_anything_is_allocated(tmp_path, attack, reason):
    path = tmp_path / "answer.npz"
    if attack == "a header claiming 10^13 floats":
        npz_with(path, {"v0.npy": npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (10**13,), }"
                                            .replace("10**13", str(10**13)), b"\0" * 8)})
    elif attack == "an .npy saved as .npz":
        np.save(path.open("wb"), np.zeros(3))
    elif attack == "a broken zip":
        path.write_bytes(b"PK\x03\x04broken")
    elif attack == "a void dtype":
        npz_with(path, {"v0.npy": npy_bytes("{'descr': '|V2000000000', 'fortran_order': False, 'shape': (1,), }",
                                            b"")})
    elif attack == "an object dtype":
        npz_with(path, {"v0.npy": npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"")})
    elif attack == "a key overriding the grader's inputs":
        np.savez(path, q0=np.zeros(3))
    elif attack == "a compressed member":
        np.savez_compressed(path, v0=np.zeros(3))
    elif attack == "fewer bytes than declared":
        npz_with(path, {"v0.npy": npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (100,), }",
                                            b"\0" * 16)})
    else:
        np.savez(path, v0=np.zeros(MAX_ARRAY_ELEMENTS // 2 + 1, dtype=np.uint8),
                 v1=np.zeros(MAX_ARRAY_ELEMENTS // 2 + 1, dtype=np.uint8))
    with pytest.raises(Unreadable, match=reason):
        read_arrays(path)


def test_special_files_are_never_opened_for_reading(tmp_path):
    fifo = tmp_path / "answer.json"
    os.mkfifo(fifo)
    done = []
    reader = threading.Thread(target=lambda: done.append(pytest.raises(Unreadable, read_regular, fifo, 100)))
    reader.start()
    reader.join(timeout=10)
    assert done and "not a regular file" in str(done[0].value)  # returned at once: a FIFO's open never blocks
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    with pytest.raises(Unreadable, match="cannot be opened"):
        read_regular(tmp_path / "link.json", 100)
    with pytest.raises(Unreadable, match="not a regular file"):
        read_regular(tmp_path, 100)
    with pytest.raises(Unreadable, match="absent"):
        read_regular(tmp_path / "none.json", 100)


def test_json_is_bounded_in_size_and_depth(tmp_path):
    path = tmp_path / "answer.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(Unreadable, match="nested too deep"):
        read_json(path)
    with pytest.raises(Unreadable, match="over the limit"):
        read_json(path, limit=1000)
    with open(path, "wb") as handle:  # a sparse file claiming 3 GB: refused by its size, never read
        handle.truncate(3 * 2**30)
    with pytest.raises(Unreadable, match="3,221,225,472 bytes"):
        read_json(path)
    path.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(Unreadable, match="not valid JSON"):
        read_json(path)


@pytest.mark.parametrize("tree, problem", [
    ({"sublayer": ["ffn", 8000, 1]}, "not plain data"),
    ({"rng": 3}, "not plain data"),
    ({"config": {"hidden_size": {"int": 10**6}}}, "not plain data"),
    ({"numpy": "V2000000000", "value": {"int": 0}}, "not plain data"),
    ({"numpy": "object", "value": {"int": 0}}, "not plain data"),
    ({"tensor": "v0", "dtype": "complex128"}, "dtype"),
    ({"ndarray": "q0"}, "not plain data"),
    ({"int": "12"}, "not plain data"),
    ({"list": {"a": 1}}, "not plain data"),
    ({"numpy": "int8", "value": {"int": 1000}}, "numpy int8"),
])
def test_the_answer_decoder_takes_plain_data_only(tree, problem):
    with pytest.raises(NotPlainData, match=problem):
        decode_answer(tree, {"v0": np.zeros(2)})


def test_the_answer_decoder_refuses_deep_trees_and_reads_every_plain_kind():
    deep: dict = {"int": 1}
    for _ in range(40):
        deep = {"list": [deep]}
    with pytest.raises(NotPlainData, match="nested"):
        decode_answer(deep, {})
    torch = pytest.importorskip("torch")
    value = [1, 2.5, "s", True, None, (3, {"k": np.arange(3)}), np.int64(4), np.float32(0.5),
             torch.tensor([1.0, 2.0], dtype=torch.bfloat16), float("nan")]
    arrays: dict = {}
    back = decode_answer(_Encoder(arrays).encode(value), arrays)
    assert back[:5] == value[:5] and back[5][0] == 3 and np.array_equal(back[5][1]["k"], np.arange(3))
    assert type(back[6]) is np.int64 and type(back[7]) is np.float32
    assert back[8].dtype == torch.bfloat16 and back[8].tolist() == [1.0, 2.0]
    assert back[9] != back[9]
    assert decode_answer({"unsupported": "x" * 10_000}, {}) == Unsupported("x" * 200)


def test_a_rewritten_report_keeps_only_well_formed_fields():
    assert clean_report({"status": ["done"], "cell": {}, "errors": [[1, 2, 3], 5, [2, "ok"], [99, "far"]]}, 10) == {
        "errors": [[2, "ok"]]}
    assert clean_report([1], 10) == {}
    assert clean_report({"status": "timeout", "cell": 3, "detail": "x" * 1000}, 10) == {
        "status": "timeout", "cell": 3, "detail": "x" * 300}


def test_names_a_spreadsheet_shows_and_messages_capped():
    name = os.fsdecode(b"caf\xe9")  # a folder name from a Windows zip: not UTF-8
    assert printable(name) == "caf\\xe9"
    assert printable("=a\nb\x07") == "=a\\nb\\x07" and printable("Zoë Ünal") == "Zoë Ünal"
    printable(name).encode("utf-8")  # writes as UTF-8
    message = "x" * 5_000_000
    cut = capped(message)
    assert len(cut) == MESSAGE_LIMIT and cut.endswith("[cut: 5,000,000 characters in all]")
    assert capped(cut) == cut and capped("short") == "short"


def test_a_large_honest_answer_is_within_the_limits(tmp_path):
    np.savez(tmp_path / "a.npz", v0=np.zeros(MAX_ARRAY_ELEMENTS, dtype=np.float64))
    assert read_arrays(tmp_path / "a.npz")["v0"].shape == (MAX_ARRAY_ELEMENTS,)


def test_a_feedback_page_gives_each_exercise_its_verdict_and_message():
    from albert_mini.book.grade import Row, feedback_texts

    rows = [Row("ada", "03", "mlm_head_params", True, "mlm_head_params: all 13 cases agree. Well done!"),
            Row("ada", "03", "break_even_embedding_size", False, "case 2 of 14 gives a different answer.\n"
                                                                   "  hint: compare V x H with V x E + E x H"),
            Row(os.fsdecode(b"b\xe9n"), "", "", False, "missing: no chapter notebook handed in")]
    pages = feedback_texts(rows)
    assert sorted(pages) == ["ada", os.fsdecode(b"b\xe9n")]
    assert "`mlm_head_params`: **passed**" in pages["ada"] and "Well done!" in pages["ada"]
    assert "`break_even_embedding_size`: **not yet**" in pages["ada"] and "hint: compare V x H" in pages["ada"]
    assert pages[os.fsdecode(b"b\xe9n")].startswith("# Feedback for b\\xe9n") and "missing" in pages[
        os.fsdecode(b"b\xe9n")]


def test_an_answer_of_thousands_of_small_arrays_reads_back(tmp_path):
    """Chapter 6's apply_80_10_10 answers its repeated calls with 8,000 arrays."""
    np.savez(tmp_path / "a.npz", **{f"v{i}": np.full(40, i, dtype=np.int64) for i in range(8000)})
    read = read_arrays(tmp_path / "a.npz")
    assert len(read) == 8000 and read["v7999"][0] == 7999
