#!/usr/bin/env python3
"""Writes or refreshes the head of a results folder's README.md: the command, the code's commit, the CPU, the date and
the files, in one block between two markers. Whatever the README holds outside the block (its title, the analysis
written by hand) is kept as it is.

Where each field comes from, first found wins:
  1. this script's flags (--command, --commit, --cpu, --date);
  2. the folder's host.txt, written by the drivers (scripts/common.sh host_txt): its first line is
     "# WHAT (HOST, CPU, YYYY-MM-DD HH:MM UTC)", and the lines "# command: ..." and "# commit: ..." follow it;
  3. the block as an earlier run of this script left it (a value established once stays);
  4. the folder's own text: its README.md outside the block and the first lines of its .txt, .md, .csv and .log
     files (a CPU only as "family 0xNN model 0xNN", a commit only after the word "commit", a command only on a line
     that says "Command:" or that starts with the command); the value names the file it was read from;
  5. for the commit and the date, git: the commit that first added the folder and its date, stated as such (the code
     that ran is that commit's parent or older).
Nothing is guessed: a CPU that none of these names is written "CPU not recorded", and so is any other field.

Usage: scripts/results_readme.py [--command TEXT] [--commit TEXT] [--cpu TEXT] [--date TEXT] [--check] DIR...
  --check   write nothing: exit 1, with a line per problem, when a folder has no README.md or its block lacks a field
            (scripts/check_docs.py runs the same check over plots/results/)
"""
import argparse
import os
import re
import subprocess
import sys

BEGIN = "<!-- results-readme: written by scripts/results_readme.py from the folder's files; edit below the end marker -->"
END = "<!-- end of results-readme -->"
FIELDS = ("Command", "Commit", "CPU", "Date")
NOT_RECORDED = {"Command": "not recorded", "Commit": "not recorded", "CPU": "CPU not recorded", "Date": "not recorded"}
MAX_FILES = 16  # file names listed before the rest are counted by kind
TEXT_KINDS = (".txt", ".md", ".csv", ".log")

HEADER = re.compile(r"^#\s*(?P<what>.*)\((?P<inside>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*$")
HEADER_DATE = re.compile(r"(\d{4}-\d\d-\d\d(?: \d\d:\d\d(?::\d\d)?)?(?: UTC)?)\s*$")
FAMILY = re.compile(r"(?:(AMD|Intel)[^,;()\n]{0,40}?)?\(?(?:AMD |Intel )?family (0x[0-9a-fA-F]+) model (0x[0-9a-fA-F]+)")
COMMIT = re.compile(r"\b[Cc]ommit[: ]+([0-9a-f]{7,40})\b")
DATE = re.compile(r"\b(20\d\d-[01]\d-[0-3]\d)\b")
COMMAND_LINE = re.compile(r"(?:^|[;:] )\s*`?(?:\$ )?((?:bash |nice -n -?\d+ )?(?:scripts/|bench/|build/bin/|mpirun |plots/)\S.*?)\s*$")
COMMAND_LABEL = re.compile(r"[Cc]ommand(?:s)?:\s*`([^`]+)`")


def read(path, limit=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read() if limit is None else f.read(limit)
    except OSError:
        return ""


def git(root, *args):
    try:
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def split_readme(text):
    """(title line or None, the block's field values, the rest of the README outside the block)."""
    lines = text.splitlines()
    values = {}
    if BEGIN in lines and END in lines[lines.index(BEGIN):]:
        b = lines.index(BEGIN)
        e = b + lines[b:].index(END)
        for line in lines[b + 1:e]:
            m = re.match(r"^- (\w+): (.*)$", line)
            if m:
                values[m.group(1)] = m.group(2)
        lines = lines[:b] + lines[e + 1:]
    title = None
    if lines and lines[0].startswith("# "):
        title = lines.pop(0)
    while lines and not lines[0].strip():
        lines.pop(0)
    return title, values, "\n".join(lines).rstrip() + ("\n" if lines else "")


def parse_header(line):
    """A results_header line, "# WHAT (HOST, CPU, YYYY-MM-DD HH:MM UTC)": {what, host, CPU, Date} as far as it says."""
    m = HEADER.match(line)
    if not m:
        return {}
    found = {"what": m.group("what").strip()}
    inside = m.group("inside")
    d = HEADER_DATE.search(inside)
    if not d:
        return {}
    found["Date"] = d.group(1) + ("" if d.group(1).endswith("UTC") or len(d.group(1)) == 10 else " UTC")
    inside = inside[:d.start()].rstrip(", ")
    host, _, cpu = inside.partition(", ")
    found["host"] = host
    if FAMILY.search(cpu):
        found["CPU"] = cpu
    return found


def host_txt(folder):
    """What the folder's host.txt says: {what, host, CPU, Date, Command, Commit} as far as it says it."""
    lines = read(os.path.join(folder, "host.txt")).splitlines()
    found = parse_header(lines[0]) if lines else {}
    if "CPU" in found:
        found["CPU"] += " (host.txt)"
    for line in lines[1:]:
        m = re.match(r"^#\s*(command|commit|cpu \(lscpu\)):\s*(.+)$", line)
        if not m:
            continue
        key = {"command": "Command", "commit": "Commit", "cpu (lscpu)": "lscpu"}[m.group(1)]
        found.setdefault(key, m.group(2).strip())
    if "lscpu" in found and "CPU" not in found:
        found["CPU"] = found["lscpu"] + " (lscpu, host.txt)"
    if "Command" in found:
        found["Command"] = f"`{found['Command']}`"
    return found


def text_files(folder):
    """The folder's README.md first, then its text files, shallow before deep, by name."""
    out = []
    for dirpath, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.endswith(TEXT_KINDS) and not f.startswith("."):
                out.append(os.path.join(dirpath, f))
    out.sort(key=lambda p: (os.path.basename(p) != "README.md", p.count(os.sep), p))
    return out


def command_in(line):
    """The command a line starts with (after a '# ' or '$ '), cut before the notes that follow it, or None."""
    line = re.sub(r"^\s*[#$]\s*", "", line)
    line = re.sub(r"^.*?\bcommand: ", "", line)
    c = COMMAND_LINE.search(line)
    if not c or c.group(1).endswith(("\\", "|")):
        return None
    return " ".join(re.split(r"\s\(|,\s|`", c.group(1))[0].split())


def scan(folder, title, prose):
    """Fields the folder's own text states: {field: value naming where it was read}."""
    found = {}
    sources = [("the title", title or ""), ("the text below", prose)]
    for path in text_files(folder):
        name = os.path.relpath(path, folder)
        if name in ("README.md", "host.txt"):
            continue
        sources.append((f"the first lines of {name}", "\n".join(read(path, 4096).splitlines()[:3])))
    for where, text in sources:
        text = re.sub(r"\\\n\s*", " ", text)  # a command continued on the next line is one line
        for line in text.splitlines():  # a results_header line states CPU and date together
            h = parse_header(line)
            if "CPU" in h and "CPU" not in found:
                found["CPU"] = f"{h['CPU']} (stated in {where})"
            if "Date" in h and "Date" not in found:
                found["Date"] = f"{h['Date']} (stated in {where})"
        if "CPU" not in found:
            m = FAMILY.search(text)
            if m:
                named = re.search(r"(AMD EPYC|AMD Ryzen|Intel Xeon|Intel Core)", text)
                vendor = f"{named.group(1)}, " if named else (f"{m.group(1)} CPU, " if m.group(1) else "")
                found["CPU"] = f"{vendor}family {m.group(2).lower()} model {m.group(3).lower()} (stated in {where})"
        if "Commit" not in found:
            m = COMMIT.search(text)
            if m:
                found["Commit"] = f"{m.group(1)} (stated in {where})"
        if "Date" not in found:
            m = DATE.search(text)
            if m:
                found["Date"] = f"{m.group(1)} (stated in {where})"
        if "Command" not in found and where != "the title":  # a title names the driver, not its arguments
            m = COMMAND_LABEL.search(text)
            command = " ".join(m.group(1).split()) if m else next(filter(None, map(command_in, text.splitlines())), None)
            if command:
                found["Command"] = f"`{command}` (stated in {where})"
    return found


def from_git(folder):
    """What git can tell when the run recorded neither its commit nor its date: the commit that first added the
    folder, and the last commit that changed a file of it other than README.md (a later run may have replaced the
    files): the code that ran is that one's parent or older, and the run was on or before its date."""
    root = git(folder, "rev-parse", "--show-toplevel")
    if not root:
        return {}
    where = os.path.relpath(os.path.abspath(folder), root)
    added = git(root, "log", "--diff-filter=A", "--format=%h %ad", "--date=format:%Y-%m-%d", "--", where)
    changed = git(root, "log", "-1", "--format=%h %ad", "--date=format:%Y-%m-%d", "--", where,
                  f":(exclude){where}/README.md")
    if not added or not changed:
        return {}
    first, first_day = added.splitlines()[-1].split()
    last, last_day = changed.split()
    came = f"the folder came in {first} ({first_day})"
    if last != first:
        came += f" and its files last changed in {last} ({last_day})"
    return {"Commit": f"not recorded; {came}, so the code that ran is {last}'s parent or older",
            "Date": f"not recorded; on or before {last_day}, when its files were last committed"}


def file_list(folder):
    entries = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name == "README.md":
            continue
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            count = sum(len([f for f in files if not f.startswith(".")]) for _, _, files in os.walk(path))
            entries.append(f"`{name}/` ({count} file{'s' if count != 1 else ''})")
        else:
            entries.append(f"`{name}`")
    if len(entries) <= MAX_FILES:
        return ", ".join(entries) if entries else "none besides this README"
    rest = entries[MAX_FILES:]
    kinds = {}
    for e in rest:
        kind = "folders" if e.endswith("file)") or e.endswith("files)") else (os.path.splitext(e.strip("`"))[1] or "other")
        kinds[kind] = kinds.get(kind, 0) + 1
    more = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return ", ".join(entries[:MAX_FILES]) + f", and {len(rest)} more ({more})"


def recorded(value):
    return bool(value) and "not recorded" not in value


def fields_for(folder, given, title, prose, kept):
    host = host_txt(folder)
    found = [given, host, kept, scan(folder, title, prose), from_git(folder)]
    values = {}
    for field in FIELDS:
        values[field] = next((layer[field] for layer in found if recorded(layer.get(field))), None)
        if values[field] is None:  # "not recorded; ..." with what is known beats a bare "not recorded"
            values[field] = next((layer[field] for layer in (given, kept, found[-1])
                                  if layer.get(field) and layer[field] != NOT_RECORDED[field]), NOT_RECORDED[field])
    if not recorded(values["CPU"]) and not values["CPU"].startswith(NOT_RECORDED["CPU"]):
        values["CPU"] = NOT_RECORDED["CPU"]
    return values, host


def render(folder, given):
    path = os.path.join(folder, "README.md")
    title, kept, rest = split_readme(read(path))
    values, host = fields_for(folder, given, title, rest, kept)
    if title is None:
        name = os.path.basename(os.path.abspath(folder))
        title = f"# {name}: {host['what']}" if host.get("what") else f"# {name}"
    block = [BEGIN] + [f"- {f}: {values[f]}" for f in FIELDS] + [f"- Files: {file_list(folder)}", END]
    return "\n".join([title, "", *block]) + ("\n\n" + rest if rest.strip() else "\n")


def problems_of(folder):
    """What the doc check says of a folder: its README.md and the block's fields."""
    path = os.path.join(folder, "README.md")
    if not os.path.isfile(path):
        return [f"{folder}: no README.md (scripts/results_readme.py {folder} writes one)"]
    text = read(path)
    if BEGIN not in text or END not in text:
        return [f"{path}: no head block naming command, commit, CPU and date (scripts/results_readme.py {folder})"]
    _, values, _ = split_readme(text)
    out = []
    for field in FIELDS + ("Files",):
        if not values.get(field, "").strip():
            out.append(f"{path}: the head block has no {field} line (scripts/results_readme.py {folder})")
    cpu = values.get("CPU", "")
    if cpu and "not recorded" not in cpu and not re.search(r"family|model|Xeon|EPYC|Ryzen|Core|ARM|Neoverse", cpu):
        out.append(f"{path}: CPU '{cpu}' names no CPU model; write 'CPU not recorded' when the files do not tell it")
    for name in re.findall(r"`([^`]+)`", values.get("Files", "")):
        if not os.path.exists(os.path.join(folder, name.rstrip("/"))):
            out.append(f"{path}: the head block lists {name}, which the folder does not hold (run the script again)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in FIELDS:
        ap.add_argument(f"--{f.lower()}", dest=f, help=f"the {f} line, when the folder's files do not tell it")
    ap.add_argument("--check", action="store_true", help="write nothing; report folders whose README lacks the head")
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    a = ap.parse_args()
    given = {f: getattr(a, f) for f in FIELDS if getattr(a, f)}
    command = given.get("Command", "")
    if "`" not in command and re.match(r"(bash |nice |mpirun |build/bin/|bench/|scripts/|plots/)", command):
        given["Command"] = f"`{command}`"  # a command; prose ("several: ...") stays prose
    problems = []
    for d in a.dirs:
        if not os.path.isdir(d):
            problems.append(f"{d}: not a folder")
        elif a.check:
            problems += problems_of(d)
        else:
            text = render(d, given)
            with open(os.path.join(d, "README.md"), "w", encoding="utf-8") as f:
                f.write(text)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
