#!/usr/bin/env python3
"""Refresh obligations/data/osv-advisories.json, the OSV snapshot QG022 reads for
`--dependencies`.

It reads OSV records from checkouts of public OSV-format advisory databases, keeps those that
affect the packages listed in PACKAGES below (guardrail, agent-framework and MCP packages), trims
them to the fields qls reads, and writes the snapshot with each database's repository, commit and
commit date. Run it from the repository root on a machine with network access:

    git clone --depth 1 https://github.com/github/advisory-database /tmp/ghsa
    git clone --depth 1 https://github.com/pypa/advisory-database /tmp/pypa
    git clone --depth 1 https://github.com/golang/vulndb /tmp/vulndb
    python3 scripts/refresh-advisories.py --github /tmp/ghsa --pypa /tmp/pypa --vulndb /tmp/vulndb

Any of the three may be left out. Records are read in the order github, pypa, vulndb, then the
transcribed records of scripts/advisories-transcribed.json (advisories qls could not yet read
from a database checkout; each names the page it was copied from); a record whose id or aliases
meet a record already kept is the same advisory, and its entries for packages that record
already covers are skipped, so a database's own record always
wins over a transcription. Withdrawn records are left out. Then commit the data file and run
`cargo test -p obligations` (the snapshot must parse) and the corpus.

Needs Python 3.9+ and PyYAML (pypa's records are YAML).
"""

import argparse
import json
import os
import subprocess
import sys

# The packages the snapshot covers, by OSV ecosystem. Names are compared in each ecosystem's
# normal form (PEP 503 for PyPI).
PACKAGES = {
    "PyPI": [
        "nemoguardrails", "guardrails-ai", "llm-guard", "langchain", "langchain-core",
        "langchain-community", "langchain-experimental", "langchain-text-splitters",
        "langchain-openai", "langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
        "langsmith", "llama-index", "llama-index-core", "llama-index-cli", "crewai", "crewai-tools",
        "pyautogen", "autogen", "autogen-agentchat", "autogen-core", "ag2", "mcp", "fastmcp",
        "mcp-server-fetch", "mcp-server-git", "openai-agents", "google-adk", "semantic-kernel",
        "haystack-ai", "farm-haystack", "litellm", "embedchain", "metagpt", "smolagents",
        "pydantic-ai", "agno", "phidata", "dspy", "dspy-ai", "letta", "camel-ai",
    ],
    "npm": [
        "@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector",
        "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-github",
        "@modelcontextprotocol/server-memory", "@modelcontextprotocol/server-everything",
        "@modelcontextprotocol/server-puppeteer", "@modelcontextprotocol/server-postgres",
        "@modelcontextprotocol/server-brave-search", "@modelcontextprotocol/server-slack",
        "mcp-remote", "mcp-proxy", "@langchain/core", "@langchain/community", "@langchain/langgraph",
        "langchain", "@openai/agents", "ai", "@mastra/core", "llamaindex", "fastmcp",
    ],
    "Go": [
        "github.com/modelcontextprotocol/go-sdk", "github.com/mark3labs/mcp-go",
        "github.com/metoro-io/mcp-golang", "github.com/tmc/langchaingo",
        "github.com/cloudwego/eino", "github.com/firebase/genkit/go",
    ],
}


def normalise(ecosystem, name):
    if ecosystem == "PyPI":
        out, sep = [], False
        for c in name.strip():
            if c in "-_.":
                sep = True
            else:
                if sep and out:
                    out.append("-")
                sep = False
                out.append(c.lower())
        return "".join(out)
    return name.strip()


WANTED = {(eco, normalise(eco, n)) for eco, names in PACKAGES.items() for n in names}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def source(name, url, checkout):
    return {"name": name, "repository": url, "commit": git(checkout, "rev-parse", "HEAD"),
            "date": git(checkout, "log", "-1", "--format=%cI")}


def first_sentence(details):
    """A record without a summary (pypa's) is summed up by its details' first sentence, cut at a
    word under 200 characters."""
    text = " ".join(details.split())
    end = text.find(". ")
    if end != -1:
        text = text[:end + 1]
    if len(text) > 200:
        text = text[:200].rsplit(" ", 1)[0] + "…"
    return text


def trim(rec, source_name):
    """The fields qls reads, for the wanted packages only."""
    affected = []
    for a in rec.get("affected", []):
        pkg = a.get("package", {})
        eco, name = pkg.get("ecosystem", ""), pkg.get("name", "")
        if (eco, normalise(eco, name)) not in WANTED:
            continue
        entry = {"package": {"ecosystem": eco, "name": name}}
        ranges = [{"type": r["type"], "events": [{k: str(v) for k, v in e.items()}
                                                  for e in r.get("events", [])]}
                  for r in a.get("ranges", []) if r.get("type") in ("ECOSYSTEM", "SEMVER")]
        if ranges:
            entry["ranges"] = ranges
        if a.get("versions"):
            entry["versions"] = [str(v) for v in a["versions"]]
        if ranges or a.get("versions"):
            affected.append(entry)
    if not affected or rec.get("withdrawn"):
        return None
    summary = rec.get("summary") or first_sentence(rec.get("details") or "")
    out = {"id": rec["id"], "aliases": sorted(rec.get("aliases") or []), "summary": summary,
           "published": rec.get("published", ""), "modified": rec.get("modified", ""),
           "affected": affected, "source": source_name}
    return out


def github_records(root):
    base = os.path.join(root, "advisories", "github-reviewed")
    for dirpath, _, files in os.walk(base):
        for f in sorted(files):
            if f.endswith(".json"):
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    yield json.load(fh)


def pypa_records(root):
    import yaml
    for eco, name in sorted(WANTED):
        d = os.path.join(root, "vulns", name)
        if eco != "PyPI" or not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".yaml"):
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    # BaseLoader keeps every scalar a string (`fixed: 0.2` stays "0.2").
                    yield yaml.load(fh, Loader=yaml.BaseLoader)


def vulndb_records(root):
    d = os.path.join(root, "data", "osv")
    for f in sorted(os.listdir(d)):
        if f.endswith(".json"):
            with open(os.path.join(d, f), encoding="utf-8") as fh:
                yield json.load(fh)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--github", help="a checkout of github/advisory-database")
    ap.add_argument("--pypa", help="a checkout of pypa/advisory-database")
    ap.add_argument("--vulndb", help="a checkout of golang/vulndb")
    ap.add_argument("--transcribed", default="scripts/advisories-transcribed.json")
    ap.add_argument("--out", default="obligations/data/osv-advisories.json")
    args = ap.parse_args()
    sources, records = [], []

    def pkgs(r):
        return {(a["package"]["ecosystem"], normalise(a["package"]["ecosystem"], a["package"]["name"]))
                for a in r["affected"]}

    def keep(rec, name):
        t = trim(rec, name)
        if t is None:
            return
        ids = {t["id"], *t["aliases"]}
        # The same advisory (an id or alias in common) already kept for a package: that
        # package's entry is not repeated; entries for other packages stay.
        covered = set()
        for k in records:
            if ids & {k["id"], *k["aliases"]}:
                covered |= pkgs(k)
        t["affected"] = [a for a in t["affected"]
                         if (a["package"]["ecosystem"],
                             normalise(a["package"]["ecosystem"], a["package"]["name"])) not in covered]
        if t["affected"]:
            records.append(t)

    for flag, name, url, reader in [
        (args.github, "github/advisory-database", "https://github.com/github/advisory-database", github_records),
        (args.pypa, "pypa/advisory-database", "https://github.com/pypa/advisory-database", pypa_records),
        (args.vulndb, "golang/vulndb", "https://github.com/golang/vulndb", vulndb_records),
    ]:
        if flag:
            sources.append(source(name, url, flag))
            for rec in reader(flag):
                keep(rec, name)
    if os.path.exists(args.transcribed):
        with open(args.transcribed, encoding="utf-8") as fh:
            tr = json.load(fh)
        names = set()
        for rec in tr["records"]:
            before = len(records)
            keep(rec, "transcribed")
            if len(records) > before:
                names.add(rec["id"])
        if names:
            sources.append({"name": "transcribed", "repository": tr["note"],
                            "commit": "(pages, see each record's `page`)", "date": tr["date"]})
            for r in records:
                if r["source"] == "transcribed":
                    r["page"] = next(x["page"] for x in tr["records"] if x["id"] == r["id"])
    if not sources:
        sys.exit("give at least one of --github, --pypa, --vulndb")
    records.sort(key=lambda r: (r["affected"][0]["package"]["ecosystem"],
                                normalise(r["affected"][0]["package"]["ecosystem"],
                                          r["affected"][0]["package"]["name"]), r["id"]))
    snap = {
        "format": "qls-osv-snapshot/1",
        "note": "OSV records for guardrail, agent-framework and MCP packages, trimmed to the fields "
                "qls reads (id, aliases, summary, dates, affected ECOSYSTEM/SEMVER ranges and "
                "versions). Written by scripts/refresh-advisories.py; do not edit by hand.",
        "packages": PACKAGES,
        "sources": sources,
        "records": records,
    }
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(snap, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    print(f"{args.out}: {len(records)} records from {', '.join(s['name'] for s in sources)}")


if __name__ == "__main__":
    main()
