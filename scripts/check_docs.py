#!/usr/bin/env python3
"""The doc check: what README.md and docs/*.md name must exist, and what they quote must be what the code and the
results folders say.

  1. Paths. Every link target, every word of a code span or code block and every path-like word of the prose that
     names a file or folder of the repository exists (a link's #anchor must be a heading of its file); build/bin/NAME must be a CMake target.
  2. Commands. In a code span or block, the --flags after build/bin/NAME (or after NAME at its start) are flags of
     that binary's --help; the --flags after a script (scripts/*.sh, bench/**/*.sh) occur in that script.
  3. The reference. docs/reference.md has a section per binary of trainers/ and bench/ (a heading `build/bin/NAME`)
     whose table lists exactly the flags of `NAME --help`; every GRADSYNC_* variable the code or the scripts read
     and every GRADSYNC_* CMake option is named in it; the flags it names elsewhere (hidden test flags, the scripts')
     occur in the code, the scripts or the CMake files. Every CSV header a document quotes is one the code or a
     script writes.
  4. The README's results table. Each figure of the "measured" column (1.63x, 0.969, 93.1%, 0.69-0.71) is a number
     in a file of the results folder(s) its row links, to the figure's precision (0.969 matches 0.9689, not 0.97;
     signs aside). The files: those the row names in backticks, plus the folder's README.md; else every .txt and .md
     in the folder and below it, logs/ aside. Not the CSVs: they hold every raw run, where almost any value occurs,
     and a figure derived from them is stated, with its derivation, in the folder's README.md.
  5. Figures in README.md and docs/*.md. In each sentence or table row that links a results folder (plots/results/X,
     or a file in it; a code span naming one counts as a link), each figure is a number of that folder's files, to the figure's precision: the files the
     sentence names in backticks or links (a CSV too) and the folder's README.md, else every .txt and .md below it.
     A figure is a decimal number or a whole number marked x, % or a unit of time or counted bytes (s, ms, us, MB),
     alone or as a range; not one in a code span or the sentence's commands, after "=" (settings: p = 8), a date,
     a version, a hex number, a size or rate in binary or bit units (4 MiB, 1 Gbit/s), or a target's. The pages
     scripts/check_docs_unchecked.txt lists are skipped, so the gap shows.
  6. Results folders. Every folder of plots/results/ has a README.md whose head block (scripts/results_readme.py)
     names the command, the code's commit, the CPU (or says "CPU not recorded") and the date, and lists only files
     the folder holds.
  7. One folder per claim. plots/results/claims.txt names each folder's claim; a claim has at most one folder per
     CPU kind (README.md's three, read from each folder's CPU line), and a folder whose CPU is not recorded is its
     claim's only one, so no two pages can give one claim from two folders. Every folder is in it and is named by
     README.md, a page of docs/ or a script; what a script reads from plots/results (plots/results/NAME, or
     $VAR/NAME where VAR holds plots/results) and what a results README links exists; no results folder holds
     source code (bench/ has the programs).

Usage: scripts/check_docs.py [--bin DIR] [--no-binaries] [--self-test]
  --bin DIR       where the built binaries are (default build/bin); their --help is run with the environment given
  --no-binaries   skip what needs the binaries (2 and 3's flag lists), e.g. while editing docs without a build
  --self-test     run check 5 on made-up sentences (a right figure, a wrong one, settings) and exit
Exit status 0 when everything holds, 1 with one line per problem otherwise.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# README figures that no results file holds and that cannot be stated there. Keep it tiny:
# (the first 30 characters of the row's first cell, the figure as the README writes it, without x or %): reason. A figure derived from a results folder's files belongs in that folder's README.md, with its derivation.
EXEMPT_FIGURES = {}

CODE_SPAN = re.compile(r"`([^`]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*")
# A word that stands for something a user fills in (DIR, FILE, RESULTS_DIR, %h, <S>, *, $HOME, ...).
PLACEHOLDER = re.compile(r"(^|[/_.-])[A-Z][A-Z_]+($|[/_.-])|[*<>{}%$\[\]]|\.\.\.")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def rel(path):
    return os.path.relpath(path, ROOT)


# --- what the repository holds ------------------------------------------------------------------------------

def cmake_targets():
    """Every add_executable of the tree, and those a user runs (the ones in trainers/ and bench/)."""
    every, user = set(), set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build", "data"))]
        if "CMakeLists.txt" in files:
            for name in re.findall(r"add_executable\(\s*([\w$]+)", read(os.path.join(folder, "CMakeLists.txt"))):
                if "$" in name:
                    continue
                every.add(name)
                if rel(folder).split(os.sep)[0] in ("trainers", "bench"):
                    user.add(name)
    return every, user


def top_entries():
    """Names a repository path starts with: the tracked top-level entries (build trees and fetched data are not)."""
    return {e for e in os.listdir(ROOT) if not e.startswith(("build", ".git")) and e != "data"} | {".ci"}


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    return {slug(m) for m in re.findall(r"^#+\s+(.*)$", strip_fences(read(path))[0], re.M)}


# --- markdown ---------------------------------------------------------------------------------------------------

def strip_fences(text):
    """The text without its fenced blocks, and the blocks' commands (continued lines joined)."""
    prose, commands, fenced, diff = [], [], False, False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            # A diff shows files that an example adds: they need not exist.
            diff = fenced and line.strip() == "```diff"
            prose.append("")
            continue
        if diff:
            prose.append("")
        elif fenced:
            if commands and commands[-1].endswith("\\"):
                commands[-1] = commands[-1][:-1] + " " + line
            else:
                commands.append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), commands


def code_of(text):
    """Every code span (line breaks inside one become spaces) and every command of a fenced block."""
    prose, commands = strip_fences(text)
    return [s.replace("\n", " ") for s in CODE_SPAN.findall(prose)] + commands


def prose_paths(text):
    """Words outside code and links that look like a path (a/b), e.g. a results folder named in a sentence."""
    bare = LINK.sub(" ", CODE_SPAN.sub(" ", strip_fences(text)[0]))
    return re.findall(r"(?<![\w/.-])(?:\.\./)?[a-z][\w.-]*/[\w./-]*[\w/]", bare)


def words(command):
    """A command's words, up to its comment."""
    out = []
    for w in command.split():
        if w.startswith("#"):
            break
        out.append(w)
    return out


def clean(word):
    return word.strip("\"'(),;:.").rstrip("/") if word not in (".", "..") else word


# --- 1 and 2: paths and commands ------------------------------------------------------------------------------

def check_path(word, doc, tops, targets, problems):
    """`word` if it names a repository path: it must exist (build/bin/NAME: a target)."""
    w = clean(word)
    if not w or PLACEHOLDER.search(w.replace("README.md", "")) or "://" in w:
        return
    if w.startswith("build/bin/"):
        name = w[len("build/bin/"):]
        if "/" not in name and name not in targets:
            problems.append(f"{rel(doc)}: `{w}`: no CMake target {name}")
        return
    head = w.split("/")[0]
    if w.startswith("../") or ("/" in w and head in tops) or w in tops:
        # A module may be named without its extension: collectives/cost_model for its .hpp and .cpp.
        candidates = [os.path.join(ROOT, w), os.path.join(os.path.dirname(doc), w)]
        if not any(os.path.exists(c) or glob.glob(glob.escape(c) + ".*") for c in candidates):
            problems.append(f"{rel(doc)}: `{w}` does not exist")


def check_links(doc, text, problems):
    prose, _ = strip_fences(text)
    for target in LINK.findall(prose):
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(full):
            problems.append(f"{rel(doc)}: link ({target}) does not exist")
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            problems.append(f"{rel(doc)}: link ({target}): no heading #{anchor} in {rel(full)}")


def script_of(word):
    w = clean(word)
    if re.match(r"^(scripts|bench|plots)/[\w/.-]+\.(sh|py)$", w) and os.path.isfile(os.path.join(ROOT, w)):
        return w
    return None


def subcommand_scripts(word):
    """The scripts a script's sub-command may run: `scripts/simulate.sh scale` runs bench/sim/experiments/scale.sh."""
    return glob.glob(os.path.join(ROOT, "**", clean(word) + ".sh"), recursive=True) if re.match(r"^[a-z][\w-]*$", word) else []


def check_command(doc, command, targets, helps, problems):
    """The --flags of each binary and script the command runs."""
    owner = None  # ("bin", name) or ("script", path, its text and its sub-command's)
    ws = words(command)
    for i, word in enumerate(ws):
        w = clean(word)
        name = w[len("build/bin/"):] if w.startswith("build/bin/") else None
        if name is None and i == 0 and w in targets and len(ws) > 1 and ws[1].startswith("--"):
            name = w
        if name in targets:
            owner = ("bin", name)
        elif script_of(word):
            owner = ("script", script_of(word), read(os.path.join(ROOT, script_of(word))))
        elif owner and owner[0] == "script" and not word.startswith("-") and ws[i - 1] == ws[i - 1].lstrip("-") and \
                script_of(ws[i - 1]):
            owner = owner[:2] + (owner[2] + "".join(read(p) for p in subcommand_scripts(word)),)
        elif word in ("|", "&&", ";", "--", "||") or word.startswith(("|", ">")):
            owner = None
        elif owner and FLAG.match(word):
            flag = FLAG.match(word).group(0)
            if owner[0] == "bin" and owner[1] in helps and flag not in helps[owner[1]]:
                problems.append(f"{rel(doc)}: `{command.strip()}`: {owner[1]} has no flag {flag}")
            if owner[0] == "script" and not re.search(re.escape(flag) + r"(?![\w-])", owner[2]):
                problems.append(f"{rel(doc)}: `{command.strip()}`: {owner[1]} has no flag {flag}")


# --- 3: the reference ------------------------------------------------------------------------------------------

def help_flags(binary, bindir, problems):
    """The flags `binary --help` lists (CLI11: an option's line starts with two spaces; pingpong's usage line)."""
    path = os.path.join(bindir, binary)
    try:
        run = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        problems.append(f"{binary} --help did not run: {e}")
        return None
    out = run.stdout + run.stderr
    flags = set(re.findall(r"^  (?:-\w, ?)?(--[a-z0-9][a-z0-9-]*)", out, re.M))
    flags |= set(re.findall(r"\[(--[a-z0-9][a-z0-9-]*)", out))
    if not flags:
        problems.append(f"{binary} --help listed no flags (exit {run.returncode}): {out.strip()[:200]}")
        return None
    return flags


def check_other_flags(text, sources, problems):
    """The flags reference.md names outside the binaries' sections (hidden test flags, the scripts' flags) occur in
    the code, the scripts or the CMake files as whole words."""
    name = None
    for line in strip_fences(text)[0].split("\n"):
        if line.startswith("#"):
            name = re.match(r"^#+\s+`build/bin/(\w+)`\s*$", line)
            continue
        if name:
            continue
        for span in CODE_SPAN.findall(line):
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", span):
                if not re.search(re.escape(flag) + r"(?![\w-])", sources):
                    problems.append(f"docs/reference.md: {flag} occurs in no code, script or CMake file")


def reference_sections(text):
    """{binary: (flags in its tables' first column, flags named anywhere in its section)} for each `build/bin/NAME`
    heading of the reference."""
    sections, name = {}, None
    prose, _ = strip_fences(text)
    for line in prose.split("\n"):
        m = re.match(r"^(#+)\s+`build/bin/([\w]+)`\s*$", line)
        if m:
            name = m.group(2)
            sections[name] = (set(), set())
            continue
        if line.startswith("#"):
            name = None
        if name is None:
            continue
        if line.startswith("|"):
            first = line.split("|")[1]
            sections[name][0].update(f for f in re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", first))
        sections[name][1].update(re.findall(r"`(--[a-z0-9][a-z0-9-]*)", line))
    return sections


def variables_read():
    """GRADSYNC_* names the code reads (getenv), the scripts take from the environment (${NAME:-...}), or CMake
    offers as options."""
    names = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build", "data"))]
        for f in files:
            path = os.path.join(folder, f)
            if f.endswith((".cpp", ".hpp", ".c", ".h")):
                names |= set(re.findall(r'getenv\("(GRADSYNC_\w+)"\)', read(path)))
            elif f.endswith(".sh"):
                names |= set(re.findall(r"\$\{(GRADSYNC_\w+):-", read(path)))
            elif f == "CMakeLists.txt":
                names |= set(re.findall(r"option\((GRADSYNC_\w+)", read(path)))
    return names


def source_texts():
    """The code's and the scripts' text, C string literals split over lines joined ("a," "b" reads as "a,b")."""
    texts = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build", "data"))]
        for f in files:
            if f.endswith((".cpp", ".hpp", ".sh", ".py")) and f != os.path.basename(__file__) or f == "CMakeLists.txt":
                texts.append(re.sub(r'"\s*\n\s*"', "", read(os.path.join(folder, f))))
    return "\n".join(texts)


def check_columns(doc, text, sources, problems):
    """Every CSV header a document quotes (a code span of comma-separated snake_case names) is written by the code
    or a script, so that the columns it documents are the ones the files have."""
    for span in CODE_SPAN.findall(strip_fences(text)[0]):
        if re.fullmatch(r"[a-z_]+(,[a-z_0-9]+){3,}", span) and span not in sources:
            problems.append(f"{rel(doc)}: the columns `{span[:50]}...` are written by no code or script")


def check_reference(bindir, user_bins, problems):
    path = os.path.join(ROOT, "docs", "reference.md")
    if not os.path.exists(path):
        problems.append("docs/reference.md is missing")
        return {}
    text = read(path)
    for name in sorted(variables_read()):
        if name not in text:
            problems.append(f"docs/reference.md: {name} (read by the code, the scripts or CMake) is not documented")
    check_other_flags(text, source_texts(), problems)
    sections = reference_sections(text)
    for name in sorted(user_bins - set(sections)):
        problems.append(f"docs/reference.md: no section `build/bin/{name}`")
    helps = {}
    if bindir is None:
        return helps
    for name in sorted(user_bins | set(sections)):
        flags = help_flags(name, bindir, problems)
        if flags is None:
            continue
        helps[name] = flags
        if name not in sections:
            continue
        table, named = sections[name]
        for flag in sorted(table - flags):
            problems.append(f"docs/reference.md: {name} {flag} is not in `{name} --help`")
        for flag in sorted(flags - table):
            problems.append(f"docs/reference.md: {name} {flag} (in `{name} --help`) is missing from its table")
        for flag in sorted(named - flags - table):
            problems.append(f"docs/reference.md: {name} section names {flag}, which `{name} --help` does not list")
    return helps


# --- 4: the README's figures ------------------------------------------------------------------------------------

NUMBER = r"\d+(?:\.\d+)?"
FIGURE = re.compile(rf"(?<![\w.\-])([-+]?)({NUMBER})(?:-({NUMBER}))?(x|%)?(?![\w.])")


def figures(cell):
    """The measured figures of a table cell: numbers with decimals, and numbers (or ranges) marked x or %."""
    cell = CODE_SPAN.sub(" ", cell)
    out = []
    for sign, a, b, unit in FIGURE.findall(cell):
        ends = [a] + ([b] if b else [])
        if unit or any("." in e for e in ends):
            out += [(sign if e is a and sign == "-" else "") + e for e in ends]
    return out


def matches(figure, values):
    """Whether some file value, given at least the figure's precision, rounds to the figure (signs aside: "within 0.15
    points" quotes a difference of -0.15)."""
    decimals = len(figure.split(".")[1]) if "." in figure else 0
    f = abs(float(figure))
    tol = 0.5 * 10 ** -decimals + 1e-9
    return any(d >= decimals and abs(v - f) <= tol for v, d in values)


def file_values(paths):
    values = set()
    for p in paths:
        for m in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", read(p)):
            values.add((abs(float(m)), len(m.split(".")[1]) if "." in m else 0))
    return values


def results_files(cell, problems):
    """The files a row's results cell points at: the files it names in backticks (paths inside one of its folders)
    and each folder's README.md; if it names none, every .txt and .md in its folders and below them, logs/ aside."""
    folders = [os.path.normpath(os.path.join(ROOT, t)) for t in LINK.findall(cell)]
    folders = [f for f in folders if os.path.isdir(f)]  # a missing one is reported by the path check
    named = CODE_SPAN.findall(cell)
    paths = []
    for n in named:
        found = [os.path.join(f, n) for f in folders if os.path.isfile(os.path.join(f, n))]
        if not found:
            problems.append(f"README.md: results cell names `{n}`, which none of its folders holds")
        paths += found
    for folder in folders:
        if named:
            readme = os.path.join(folder, "README.md")
            paths += [readme] if os.path.isfile(readme) else []
            continue
        for sub, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d != "logs"]
            paths += [os.path.join(sub, f) for f in sorted(files) if f.endswith((".txt", ".md"))]
    return paths


def results_table_lines():
    """The line numbers of README.md's results table (check 4 reads their figures)."""
    lines, inside = set(), False
    for n, line in enumerate(read(os.path.join(ROOT, "README.md")).split("\n"), 1):
        if line.startswith("## "):
            inside = line.strip() == "## Results"
        elif inside and line.startswith("|"):
            lines.add(n)
    return lines


def check_results_table(problems):
    text = read(os.path.join(ROOT, "README.md"))
    section = text.split("\n## Results", 1)[1].split("\n## ", 1)[0]
    lines = section.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    if "measured" not in header or "results" not in header:
        problems.append("README.md: the results table has no 'measured' or 'results' column")
        return
    col_m, col_r = header.index("measured"), header.index("results")
    checked = 0
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != len(header):
            problems.append(f"README.md: results row has {len(cells)} cells, not {len(header)}: {row[:60]}")
            continue
        values = file_values(results_files(cells[col_r], problems))
        label = re.sub(r"\W+", " ", cells[0]).strip()[:50]
        for fig in figures(cells[col_m]):
            checked += 1
            if not matches(fig, values) and (cells[0][:30], fig) not in EXEMPT_FIGURES:
                problems.append(f"README.md: results row '{label}': {fig} is in no results file it names")
    if checked == 0:
        problems.append("README.md: no figures found in the results table's measured column")



# --- 5: figures in sentences that link a results folder ---------------------------------------------------------

# A figure: a decimal number (0.9688, 1.22), or a whole number marked x or % (12x, 93%) or followed by a unit of
# time or of bytes counted (299 s, 4.3 us, 51.4 MB), alone or as a range (1.21-1.49x). Not figures: numbers in code
# spans (commands, flags), after "=" (p = 8, C = 0.1: settings), dates and years, versions (Open MPI 4.1, Ubuntu
# 22.04, 1.2.6), hex (0x19), sizes and rates given in binary or bit units (4 MiB, 1 Gbit/s: settings), and numbers the
# sentence's own commands hold.
UNIT = r"(?:x|%|\s?(?:s|ms|us|µs|ns|min|h|MB|KB|GB|GB/s|MB/s|GFLOP/s|B/s))"
SENT_FIGURE = re.compile(
    rf"(?<![\w.\-/@=])(?<!= )(?<!=)([-+]?)({NUMBER})(?:\s?(?:-|to)\s?({NUMBER}))?({UNIT})?(?![\w.]*\d)(?![\w/])")
VERSION_BEFORE = re.compile(r"(?:MPI|MPICH|Ubuntu|Debian|version|Python|GCC|gcc|CMake|SimGrid|gnuplot|PyTorch|"
                            r"torch|BLIS|doctest|numpy|C\+\+|v|LTS|Clang|clang|OpenMPI|ULFM|pmix|Slurm|OSDI'|AVX|[Tt]argets?|within|lr)\s*$")
RESULTS_LINK = re.compile(r"(?:^|/)plots/results/[\w.+-]+")
# Pages whose figures check 5 does not read yet, one a line, so that the gap shows.
UNCHECKED_FILE = os.path.join(ROOT, "scripts", "check_docs_unchecked.txt")


def units(text):
    """The text's sentences and table rows, each as (first line number, text): fenced blocks aside, a paragraph or
    list item is split into sentences at '. ' followed by a capital, a table row is one unit."""
    prose, _ = strip_fences(text)
    out, para = [], []

    def flush():
        if not para:
            return
        joined = "\n".join(t for _, t in para)
        start, first = 0, para[0][0]
        for m in re.finditer(r"(?<=[.!?:])\s+(?=[A-Z*\[(`])|$", joined):
            piece = joined[start:m.start()]
            if piece.strip():
                out.append((first + joined[:start].count("\n"), piece))
            start = m.end()
        para.clear()

    for n, line in enumerate(prose.split("\n"), 1):
        if line.startswith("|"):
            flush()
            out.append((n, line))
        elif not line.strip() or line.startswith("#") or re.match(r"^\s*([-*]|\d+\.)\s", line):
            flush()
            if line.strip() and not line.startswith("#"):
                para.append((n, line))
        else:
            para.append((n, line))
    flush()
    return out


def sentence_figures(unit):
    """(offset, figure) of each figure of a sentence or row (see SENT_FIGURE), link targets and code spans aside."""
    masked = re.sub(r"\]\([^)]*\)", lambda m: " " * len(m.group(0)), unit)
    masked = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), masked)
    masked = re.sub(r"\d{4}-\d{2}-\d{2}|0x[0-9a-fA-F]+|\d+(?:\.\d+){2,}", lambda m: " " * len(m.group(0)), masked)
    masked = re.sub(r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B(?!/s)|[KMGT]?bit/s|Gbit|Mbit|[KMG]iB/s|GHz|MHz|vCPUs?|cores?)\b",
                    lambda m: " " * len(m.group(0)), masked)
    commands = " ".join(CODE_SPAN.findall(unit))
    out = []
    for m in SENT_FIGURE.finditer(masked):
        sign, a, b, unit_ = m.groups()
        ends = [a] + ([b] if b else [])
        if not (unit_ or any("." in e for e in ends)):
            continue
        if VERSION_BEFORE.search(masked[:m.start()]):
            continue
        for e in ends:
            if re.search(rf"(?<![\d.]){re.escape(e)}(?![\d.]*\d)", commands):
                continue
            out.append((m.start(), e))
    return out


def folder_files(folder, unit, linked=()):
    """The files a sentence's figures may come from, as for the results table (check 4): the folder's files the
    sentence names in backticks or links to (a CSV too) and its README.md; if it names none, every .txt and .md in
    the folder and below it, logs/ aside."""
    named = [f for f in linked if f.startswith(folder + os.sep) and f.endswith((".csv", ".txt", ".md"))]
    for n in CODE_SPAN.findall(unit):
        for cand in (os.path.join(folder, n), os.path.join(ROOT, n)):
            if os.path.isfile(cand) and cand.endswith((".csv", ".txt", ".md")) and \
                    os.path.abspath(cand).startswith(folder + os.sep) and cand not in named:
                named.append(cand)
    if named:
        readme = os.path.join(folder, "README.md")
        return named + ([readme] if os.path.isfile(readme) and readme not in named else [])
    paths = []
    for sub, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "logs"]
        paths += [os.path.join(sub, f) for f in sorted(files) if f.endswith((".txt", ".md"))]
    return paths


def unchecked_pages():
    if not os.path.exists(UNCHECKED_FILE):
        return set()
    return {l.split("#")[0].strip() for l in read(UNCHECKED_FILE).split("\n") if l.split("#")[0].strip()}


def check_sentence_figures(doc, text, problems, skip_lines=()):
    """In each sentence or table row that links a results folder (plots/results/X, or a file in it), each figure
    is a number of that folder's files, to the figure's precision (as the results table's check)."""
    cache = {}
    for first, unit in units(text):
        folders, linked = [], []
        # A results path in a code span (`plots/results/main/straggler.txt`) refers to its folder as a link does.
        spans = [os.path.relpath(os.path.join(ROOT, p), os.path.dirname(doc))
                 for p in re.findall(r"`(plots/results/[\w./+-]+)`", unit)]
        for target in LINK.findall(unit) + spans:
            path = target.split("#")[0]
            full = os.path.normpath(os.path.join(os.path.dirname(doc), path))
            if not os.path.exists(full):
                continue
            m = RESULTS_LINK.search(rel(full).replace(os.sep, "/"))
            if m and rel(full).startswith("plots"):
                folder = os.path.join(ROOT, m.group(0).lstrip("/"))
                # A link into a folder's subfolder (sim-train/flat-1g) names that subfolder.
                deeper = full if os.path.isdir(full) else os.path.dirname(full)
                if os.path.isfile(full):
                    linked.append(full)
                folder = deeper if deeper.startswith(folder) else folder
                if os.path.isdir(folder) and folder not in folders:
                    folders.append(folder)
        if not folders or first in skip_lines:
            continue
        key = tuple(folders) + tuple(linked) + tuple(CODE_SPAN.findall(unit))
        if key not in cache:
            cache[key] = file_values([p for f in folders for p in folder_files(f, unit, linked)])
        for offset, fig in sentence_figures(unit):
            if not matches(fig, cache[key]):
                line = first + unit[:offset].count("\n")
                names = ", ".join(rel(f) for f in folders)
                problems.append(f"{rel(doc)}:{line}: {fig} is in no file of {names} the sentence reads")


def self_test():
    """Check 5 on made-up sentences against plots/results/main: a figure the folder holds passes, one changed by a
    digit fails, settings and commands are not figures. Exit 0 when it behaves."""
    doc = os.path.join(ROOT, "docs", "self-test.md")
    link = "([plots/results/main](../plots/results/main) `sync_ab.txt`)"
    cases = [(f"The ring gave 1.22x over serial {link}.", 0),
             (f"The ring gave 1.32x over serial {link}.", 1),
             (f"At p = 2.5 with `--lr 0.77` and 4 MiB on 1 Gbit/s, Open MPI 4.1 {link}.", 0),
             (f"| ring | 1.21-1.49x | 1.21-1.59x | {link} |", 1)]
    bad = 0
    for text, want in cases:
        problems = []
        check_sentence_figures(doc, text + "\n", problems)
        if len(problems) != want:
            bad += 1
            print(f"self-test: {want} problem(s) expected, got {problems} for: {text}")
    print(f"check_docs self-test: {len(cases) - bad} of {len(cases)} cases behave")
    return 1 if bad else 0


# --- 6: results folders ------------------------------------------------------------------------------------------

def check_results_folders(problems):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import results_readme  # noqa: E402 (scripts/ is not a package)
    base = os.path.join(ROOT, "plots", "results")
    for name in sorted(os.listdir(base)):
        if os.path.isdir(os.path.join(base, name)):
            problems += [p.replace(ROOT + os.sep, "") for p in results_readme.problems_of(os.path.join(base, name))]

# --- 7: one folder per claim -------------------------------------------------------------------------------------

RESULTS = os.path.join(ROOT, "plots", "results")
CLAIMS_FILE = os.path.join(RESULTS, "claims.txt")
SOURCE_CODE = re.compile(r"\.(?:cpp|hpp|cc|cxx|c|h|py|sh|gp)(?:\.txt)?$")
CPU_FAMILY = re.compile(r"family (0x[0-9a-fA-F]+) model (0x[0-9a-fA-F]+)")


def cpu_kind(folder):
    """README.md's CPU kind of a results folder, from the CPU line of its head block: None when not recorded."""
    m = re.search(r"^- CPU: (.*)$", read(os.path.join(folder, "README.md")), re.M) \
        if os.path.isfile(os.path.join(folder, "README.md")) else None
    f = CPU_FAMILY.search(m.group(1)) if m else None
    if not f:
        return None
    family, model = f.group(1).lower(), int(f.group(2), 16)
    if family == "0x1a":
        return "AVX-512 EPYC (family 0x1a)"
    if family == "0x19":
        return {0x01: "AVX2 EPYC (family 0x19 model 0x01)", 0x11: "AVX-512/256 EPYC (family 0x19 model 0x11)"}.get(
            model, f"family 0x19 model {f.group(2)}")
    return f"family {family} model {f.group(2)}"


def read_claims(problems):
    """{folder: claim} from claims.txt ("CLAIM: FOLDER FOLDER ..." a line, # comments)."""
    if not os.path.isfile(CLAIMS_FILE):
        problems.append(f"{rel(CLAIMS_FILE)} is missing: one line a claim, `CLAIM: FOLDER...`")
        return {}
    claims = {}
    for n, line in enumerate(read(CLAIMS_FILE).split("\n"), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        claim, sep, folders = line.rpartition(":")
        if not sep or not claim.strip() or not folders.split():
            problems.append(f"{rel(CLAIMS_FILE)}:{n}: not `CLAIM: FOLDER...`")
            continue
        for f in folders.split():
            if f in claims:
                problems.append(f"{rel(CLAIMS_FILE)}:{n}: {f} is already the folder of '{claims[f]}'")
            claims[f] = claim.strip()
    return claims


def script_reads(path):
    """The results folders a script names: plots/results/NAME, and $VAR/NAME or ${VAR}/NAME for a VAR it sets to a
    path ending in plots/results."""
    text = read(path)
    names = re.findall(r"plots/results/([\w.+-]+)", text)
    for var in set(re.findall(r"^\s*(?:local\s+)?(\w+)=[\"']?[^\s\"']*plots/results[\"']?\s*$", text, re.M)):
        names += re.findall(r"\$\{?" + var + r"\}?/([\w.+-]+)", text)
    return {n for n in names if not PLACEHOLDER.search(n)}


def check_claims(docs, problems):
    folders = sorted(d for d in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, d)))
    claims = read_claims(problems)
    for f in sorted(set(claims) - set(folders)):
        problems.append(f"{rel(CLAIMS_FILE)}: {f}: no such folder in plots/results")
    for f in folders:
        if f not in claims:
            problems.append(f"plots/results/{f}: not in {rel(CLAIMS_FILE)} (name its claim, or remove the folder: "
                            "git history keeps it)")
    by_claim = {}
    for f in folders:
        if f in claims:
            by_claim.setdefault(claims[f], []).append(f)
    for claim, fs in sorted(by_claim.items()):
        kinds = {}
        for f in fs:
            kind = cpu_kind(os.path.join(RESULTS, f))
            if kind is None and len(fs) > 1:
                problems.append(f"plots/results/{f}: CPU not recorded, so it cannot be one of the folders of "
                                f"'{claim}' ({', '.join(fs)}): keep the newest run only")
            elif kind in kinds:
                problems.append(f"plots/results/{kinds[kind]} and plots/results/{f}: two folders for '{claim}' on "
                                f"one CPU kind ({kind}): keep the newest run only")
            else:
                kinds[kind] = f
    named = set()
    for doc in docs:
        named |= set(re.findall(r"plots/results/([\w.+-]+)", read(doc)))
    scripts = []
    for top in ("plots", "bench", "scripts", "tests"):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) != RESULTS]
            scripts += [os.path.join(folder, f) for f in files if f.endswith((".sh", ".py", ".gp", ".txt"))
                        and os.path.join(folder, f) != os.path.abspath(__file__)]
    for path in scripts:
        reads = script_reads(path)
        named |= reads
        for f in sorted(f for f in reads - set(folders) if not os.path.exists(os.path.join(RESULTS, f))):
            problems.append(f"{rel(path)}: reads plots/results/{f}, which does not exist")
    for f in folders:
        if f not in named:
            problems.append(f"plots/results/{f}: named by no page (README.md, docs/) and no script: link it or "
                            "remove it (git history keeps it)")
    for folder, dirs, files in os.walk(RESULTS):
        for name in files:
            path = os.path.join(folder, name)
            if SOURCE_CODE.search(name):
                problems.append(f"{rel(path)}: source code in a results folder (bench/ holds the programs)")
            elif name.endswith(".md"):
                for target in LINK.findall(strip_fences(read(path))[0]):
                    if "://" in target:
                        continue
                    full = os.path.normpath(os.path.join(folder, target.split("#")[0]))
                    if full.startswith(RESULTS + os.sep) and not os.path.exists(full):
                        problems.append(f"{rel(path)}: link ({target}) does not exist")


# --- main ---------------------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description="Check README.md and docs/*.md against the tree.")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--no-binaries", action="store_true")
    parser.add_argument("--self-test", action="store_true", help="check 5 on made-up sentences, then exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems = []
    targets, user_bins = cmake_targets()
    tops = top_entries()
    helps = check_reference(None if args.no_binaries else args.bin, user_bins, problems)
    docs = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    sources = source_texts()
    for doc in docs:
        text = read(doc)
        check_links(doc, text, problems)
        check_columns(doc, text, sources, problems)
        for word in prose_paths(text):
            check_path(word, doc, tops, targets, problems)
        for command in code_of(text):
            for word in words(command):
                check_path(word, doc, tops, targets, problems)
            check_command(doc, command, targets, helps, problems)
    check_results_table(problems)
    unchecked = unchecked_pages()
    for page in sorted(unchecked):
        if not os.path.exists(os.path.join(ROOT, page)):
            problems.append(f"{rel(UNCHECKED_FILE)}: {page} does not exist")
    for doc in docs:
        if rel(doc) not in unchecked:
            check_sentence_figures(doc, read(doc), problems, results_table_lines() if rel(doc) == "README.md" else ())
    check_results_folders(problems)
    check_claims(docs, problems)
    for p in problems:
        print(p)
    print(f"check_docs: {len(docs)} documents, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
