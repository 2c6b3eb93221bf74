"""Certificates (SPEC §5): `qls verify --certificates DIR` writes the evidence of every
unreachable verdict as SMT-LIB 2, and `qls certify DIR` re-checks it with cvc5 (the `cvc5`
package of the pinned test requirements) in a process of its own. One flipped bit of a
certificate must make it fail — whether or not the index's hash is forged to match."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import qls

from conftest import ROOT, qls_bin

SHOP = ROOT / "examples" / "shop" / "agent.yaml"


def certify(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([qls_bin(), "certify", str(folder), "--python", sys.executable],
                          capture_output=True, text=True)


def index(folder: Path) -> dict:
    return json.loads((folder / "certificates.json").read_text())


def test_every_unreachable_verdict_of_the_shop_has_a_certificate_cvc5_accepts(tmp_path: Path) -> None:
    out = tmp_path / "bounded"
    r = qls.verify(str(SHOP), session_steps=1, certificates=str(out), format="json")
    report = r.report
    unreachable = [o["id"] for o in report["obligations"] if o["verdict"].startswith("unreachable")]
    entries = index(out)["certificates"]
    assert [e["obligation"] for e in entries] == unreachable
    assert unreachable and all(e["kind"] == "unrolling" and e["file"] for e in entries)
    p = certify(out)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("\naccepted ") + p.stdout.startswith("accepted ") == len(entries), p.stdout
    assert f"{len(entries)} accepted, 0 rejected by cvc5 1.4.2" in p.stdout


def test_a_proof_for_any_length_is_certified_by_its_invariant(tmp_path: Path) -> None:
    out = tmp_path / "any"
    p = subprocess.run([qls_bin(), "verify", str(SHOP), "--session-steps", "any",
                        "--certificates", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = index(out)
    entries = doc["certificates"]
    # The invariant the proof itself kept: Spacer's or the induction's.
    assert entries and all(e["kind"] in ("spacer", "induction") for e in entries), entries
    assert all(e.get("from_proof") for e in entries), entries
    shared = {s["file"]: s for s in doc.get("invariants", [])}
    for e in entries:
        if e["kind"] == "induction":
            # Initiation, consecution, the induction step, and k base-case questions.
            assert len(e["checks"]) == 3 + e["depth"], e
        else:
            # Safety here; initiation and a consecution per command in the shared file.
            assert len(e["checks"]) == 1 and e["invariant"] in shared, e
            assert len(shared[e["invariant"]]["checks"]) >= 2, shared
    c = certify(out)
    assert c.returncode == 0, c.stdout + c.stderr
    assert f"{len(entries)} accepted, 0 rejected by cvc5 1.4.2" in c.stdout


def test_a_bounded_proof_over_two_turns_is_certified_by_z3s_invariant(tmp_path: Path) -> None:
    out = tmp_path / "turns"
    r = qls.verify(str(SHOP), session_steps=2, certificates=str(out), format="json")
    unreachable = [o["id"] for o in r.report["obligations"] if o["verdict"] == "unreachable"]
    entries = index(out)["certificates"]
    assert unreachable and [e["obligation"] for e in entries] == unreachable
    assert all(e["kind"] == "induction" for e in entries), entries
    c = certify(out)
    assert c.returncode == 0, c.stdout + c.stderr
    assert f"{len(entries)} accepted, 0 rejected by cvc5 1.4.2" in c.stdout


def test_one_flipped_bit_fails_the_certificate_even_with_a_forged_hash(tmp_path: Path) -> None:
    out = tmp_path / "flip"
    subprocess.run([qls_bin(), "verify", str(SHOP), "--session-steps", "1", "--certificates", str(out)],
                   capture_output=True, text=True, check=False)
    entries = index(out)["certificates"]
    target = out / entries[0]["file"]
    text = bytearray(target.read_bytes())
    # The first declaration's width: `(_ BitVec 2)` -> `(_ BitVec 3)` is one bit (0x32 -> 0x33).
    at = text.index(b"(_ BitVec ") + len(b"(_ BitVec ")
    text[at] ^= 1
    target.write_bytes(bytes(text))
    p = certify(out)
    assert p.returncode == 1, p.stdout + p.stderr
    line = next(x for x in p.stdout.splitlines() if entries[0]["file"] in x)
    assert line.startswith("REJECTED") and "changed since it was written" in line, line
    # A forger who also rewrites the index's hash: cvc5 itself refuses the certificate.
    doc = index(out)
    doc["certificates"][0]["sha256"] = hashlib.sha256(bytes(text)).hexdigest()
    (out / "certificates.json").write_text(json.dumps(doc))
    p = certify(out)
    assert p.returncode == 1, p.stdout + p.stderr
    line = next(x for x in p.stdout.splitlines() if entries[0]["file"] in x)
    assert line.startswith("REJECTED") and "cvc5:" in line and "changed" not in line, line


def test_a_task_verdict_is_certified_on_the_tasks_own_system(tmp_path: Path) -> None:
    # An attack goal blocked and a user task impossible (SPEC §1.5) rest on the engines'
    # unreachable answer about the task's monitor composed with the inputs: each gets a
    # certificate of that system, which cvc5 accepts.
    cases = tmp_path / "cases"
    shutil.copytree(ROOT / "corpus" / "tasks-handoff-guarded", cases / "guarded")
    out = tmp_path / "certs"
    p = subprocess.run([qls_bin(), "corpus", str(cases), "--certificates", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    expected = json.loads((cases / "guarded" / "expected.json").read_text())
    shut = [t for t, v in expected["tasks"].items() if v in ("blocked", "impossible")]
    entries = index(out / "guarded")["certificates"]
    tasks = [e for e in entries if e["obligation"].split(":")[0] in ("QG024", "QG025")]
    for name in shut:
        mine = [e for e in tasks if name in e["obligation"]]
        assert mine and all(e["file"] and e["decided_by"] for e in mine), (name, tasks)
        assert {e["query"] for e in mine} <= {"as_declared", "with_person"}, mine
    c = certify(out / "guarded")
    assert c.returncode == 0, c.stdout + c.stderr
    assert f"{len(entries)} accepted, 0 rejected" in c.stdout, c.stdout


def test_an_invariants_shared_file_is_checked_and_a_flipped_bit_in_it_fails(tmp_path: Path) -> None:
    # The corpus's batch case: a bounded verdict on a system with batches, certified by every
    # reachable state (the symbolic fixpoint), whose initiation and consecution are in a shared
    # file; cvc5 accepts it, and one flipped bit of the shared file (its hash forged to match)
    # refuses every certificate that names it.
    case = "batch-untrusted-read-then-persistent-write-fires"
    cases = tmp_path / "cases"
    shutil.copytree(ROOT / "corpus" / case, cases / case)
    out = tmp_path / "certs"
    p = subprocess.run([qls_bin(), "corpus", str(cases), "--certificates", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    folder = out / case
    doc = index(folder)
    named = [e for e in doc["certificates"] if e.get("invariant")]
    assert named and doc["invariants"], doc
    c = certify(folder)
    assert c.returncode == 0, c.stdout + c.stderr
    assert f"{len(doc['certificates'])} accepted, 0 rejected by cvc5 1.4.2" in c.stdout
    shared = doc["invariants"][0]
    target = folder / shared["file"]
    text = bytearray(target.read_bytes())
    at = text.index(b"(_ BitVec ") + len(b"(_ BitVec ")
    text[at] ^= 1
    target.write_bytes(bytes(text))
    shared["sha256"] = hashlib.sha256(bytes(text)).hexdigest()
    (folder / "certificates.json").write_text(json.dumps(doc))
    p = certify(folder)
    assert p.returncode == 1, p.stdout + p.stderr
    for e in named:
        if e["invariant"] == shared["file"]:
            line = next(x for x in p.stdout.splitlines() if e["file"] in x)
            assert line.startswith("REJECTED") and "its shared file" in line, line
