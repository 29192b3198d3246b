#!/usr/bin/python3
"""Checks that the man pages (packaging/man/*) agree with the programs, the
daemon's configuration and docs/.

For each program (edgemond, edgemon, edgetop, edgemon-sim, edgemon-control,
edgemon-probe) the options its --help prints are compared with its man page,
scope by scope: the program's own options with the page's SYNOPSIS and
*OPTIONS sections, and for edgemon each subcommand's options
(`edgemon SUB --help`) with the page's `.SS SUB` subsection of COMMANDS.
Both ways: every option --help prints has a .TP paragraph of its own (its
tag names it) in its scope, and every option a tag or the synopsis of a
scope names is one --help prints there. Also:

  - every --option mentioned anywhere in a page is an option of some program;
  - an option whose value is a duration (CLI11 type DURATION) is not shown
    with a placeholder such as MS or N;
  - each value of an option's or positional's fixed set ({table,csv,json})
    appears in its scope;
  - every [table] key the configuration accepts (the key table of
    daemon/runtime/config.cc) is a tag `table.key = default` of edgemond(8)'s
    CONFIGURATION section (the [control] keys also of edgemon-control(8)'s),
    is listed in packaging/edgemond.toml with the default the pages give,
    and appears in its docs page (docs/daemon.md; the [control] keys, which
    daemon.md leaves to docs/control.md, there); and neither page documents
    a key the configuration lacks;
  - every exit status constant (kExit... = N) of edgemon, edgemond and
    edgemon-control is described in its page's EXIT STATUS section;
  - every installed program has a page, every page is installed
    (packaging/CMakeLists.txt), .TH names the file, and every edgemon page a
    page refers to (name(N)) exists.

  man_pages.py --source . --edgemond build/daemon/edgemond \\
      --edgemon build/client/cli/edgemon --edgetop build/tui/edgetop \\
      --sim build/daemon/sim/edgemon-sim \\
      --control build/daemon/control/edgemon-control \\
      --probe build/daemon/edgemon-probe

Prints one line per disagreement; the last line is "N checks, M failed",
and the exit status is non-zero when any failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tomllib

OPTION = re.compile(r"(?<![\w-])--[a-z0-9]+(?:-[a-z0-9]+)*")
FONT = re.compile(r"\\f(?:\[[A-Z]*\]|\([A-Z]{2}|[BIRP])")
SPECIAL = {r"\(dq": '"', r"\(aq": "'", r"\(en": "-", r"\(em": "-", r"\(bu": "*",
           r"\(ti": "~", r"\(mu": "x"}
FONT_MACROS = {"B", "I", "SM", "SB"}
ALTERNATING_MACROS = {"BR", "RB", "BI", "IB", "IR", "RI"}
# The part of a CLI11 help line after the option's names: its type.
HELP_OPTION = re.compile(r"^  (-[^\s]+)(?: (.*?))?(?:\s{2,}|$)")
HELP_POSITIONAL = re.compile(r"^  ([a-z][\w-]*) (\S+)")
CHOICES = re.compile(r":\{([^}]*)\}")
# A placeholder after an option in a tag or synopsis: an upper-case word.
PLACEHOLDER = re.compile(r"(--[a-z0-9-]+)(?:\s+|=)\[?([A-Z][A-Z0-9_]*)(?![\w-])")
DURATION_PLACEHOLDERS = {"DURATION", "DUR"}
PROGRAMS = ("edgemond", "edgemon", "edgetop", "edgemon-sim", "edgemon-control", "edgemon-probe")


class Checks:
    def __init__(self):
        self.count = 0
        self.failures = []

    def expect(self, ok, message):
        self.count += 1
        if not ok:
            self.failures.append(message)
            print(f"FAIL: {message}")
        return ok


def plain(text):
    """Troff text without font changes and escapes."""
    text = FONT.sub("", text)
    for esc, char in SPECIAL.items():
        text = text.replace(esc, char)
    text = text.replace(r"\-", "-").replace(r"\&", "").replace(r"\ ", " ").replace(r"\e", "\\")
    return text


def macro_args(rest):
    return [m.group(1) if m.group(1) is not None else m.group(2)
            for m in re.finditer(r'"([^"]*)"|(\S+)', rest)]


class Page:
    """A man page as sections (.SH) and subsections (.SS) of plain lines,
    with the tags of .TP paragraphs marked."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.th = None
        # (section, subsection) -> list of (line, is_tag, in_synopsis)
        self.parts = {}
        self.order = []
        section, subsection = "", ""
        tag_next = False
        synopsis = False  # an .SS's lines before its first paragraph break
        with open(path, encoding="utf-8") as f:
            for raw in f.read().splitlines():
                if raw.startswith('.\\"') or raw.startswith("'\\\""):
                    continue
                if raw.startswith("."):
                    name, _, rest = raw[1:].partition(" ")
                    if name == "TH":
                        self.th = macro_args(rest)
                        continue
                    if name in ("SH", "SS"):
                        heading = plain(" ".join(macro_args(rest)))
                        if name == "SH":
                            section, subsection = heading, ""
                        else:
                            subsection = heading
                        synopsis = name == "SS"
                        tag_next = False
                        self._add(section, subsection, heading, False, synopsis)
                        continue
                    if name == "TP":
                        tag_next = True
                        synopsis = False
                        continue
                    if name in FONT_MACROS:
                        line = plain(" ".join(macro_args(rest)))
                    elif name in ALTERNATING_MACROS:
                        line = plain("".join(macro_args(rest)))
                    else:
                        if name in ("PP", "P", "LP", "IP"):
                            synopsis = False
                        continue
                else:
                    line = plain(raw)
                self._add(section, subsection, line, tag_next, synopsis)
                tag_next = False

    def _add(self, section, subsection, line, tag, synopsis):
        key = (section, subsection)
        if key not in self.parts:
            self.parts[key] = []
            self.order.append(key)
        self.parts[key].append((line, tag, synopsis))

    def lines(self, section=None, subsection=None):
        for (sec, sub) in self.order:
            if section is not None and sec != section:
                continue
            if subsection is not None and sub != subsection:
                continue
            for line, tag, synopsis in self.parts[(sec, sub)]:
                yield line, tag, synopsis

    def text(self, section=None, subsection=None):
        return "\n".join(line for line, _, _ in self.lines(section, subsection))

    def sections(self):
        seen = []
        for sec, _ in self.order:
            if sec not in seen:
                seen.append(sec)
        return seen

    def subsections(self, section):
        return [sub for sec, sub in self.order if sec == section and sub]


class Help:
    """What a CLI11 --help prints: options with their types, positionals,
    subcommands."""

    def __init__(self, text):
        self.options = {}      # --name -> type text
        self.positionals = {}  # name -> type text
        self.subcommands = []
        block = None
        for line in text.splitlines():
            if re.match(r"^\S.*:$", line):
                block = line[:-1]
                continue
            if block == "Options":
                m = HELP_OPTION.match(line)
                if m:
                    for name in m.group(1).split(","):
                        if name.startswith("--"):
                            self.options[name] = m.group(2) or ""
            elif block == "Positionals":
                m = HELP_POSITIONAL.match(line)
                if m:
                    self.positionals[m.group(1)] = m.group(2)
            elif block == "Subcommands":
                m = re.match(r"^  ([a-z][\w-]*)\s", line)
                if m:
                    self.subcommands.append(m.group(1))

    def choices(self):
        out = {}
        for name, type_text in list(self.options.items()) + list(self.positionals.items()):
            m = CHOICES.search(type_text)
            if m:
                out[name] = m.group(1).split(",")
        return out


def run_help(program, *args):
    r = subprocess.run([program, *args, "--help"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, COLUMNS="200"))
    if r.returncode != 0:
        raise SystemExit(f"{program} {' '.join(args)} --help exited {r.returncode}: {r.stderr}")
    return Help(r.stdout)


def options_in(lines, tags_only, synopsis=True):
    """The options in `lines`: all, or only those in tags (and, with
    `synopsis`, in synopsis lines)."""
    found = set()
    for line, tag, in_synopsis in lines:
        if not tags_only or tag or (synopsis and in_synopsis):
            found.update(OPTION.findall(line))
    return found


def forms(lines):
    """The tags one by one, and the synopsis lines joined (an option and its
    placeholder are often on two lines there)."""
    out = [line for line, tag, _ in lines if tag]
    out.append(" ".join(line for line, tag, synopsis in lines if synopsis and not tag))
    return out


def compare_scope(checks, page, where, help_, lines, exempt=()):
    """Both ways: what --help prints is described in this scope (a tag of
    its own), and what the scope's tags and synopsis name --help prints;
    choices and placeholders too."""
    described = options_in(lines, True, synopsis=False)
    documented = options_in(lines, True)
    text = "\n".join(line for line, _, _ in lines)
    for opt in sorted(help_.options):
        if opt in exempt:
            continue
        checks.expect(opt in described,
                      f"{page.name}: {where}: {opt} (in --help) is not described (no .TP tag)")
    for opt in sorted(documented - set(help_.options)):
        checks.expect(False, f"{page.name}: {where}: documents {opt}, which --help does not list")
    for name, values in sorted(help_.choices().items()):
        for value in values:
            checks.expect(re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text) is not None,
                          f"{page.name}: {where}: {name} value '{value}' is not mentioned")
    for opt, word in sorted({m for form in forms(lines) for m in PLACEHOLDER.findall(form)}):
        if "DURATION" in help_.options.get(opt, ""):
            checks.expect(word in DURATION_PLACEHOLDERS,
                          f"{page.name}: {where}: {opt} {word}: the option takes a duration "
                          f"(500ms, 2s); write {opt} DURATION")


def option_sections(page):
    return [s for s in page.sections() if s == "SYNOPSIS" or s.endswith("OPTIONS")]


def check_program(checks, page, help_, all_options):
    # The program's own options: all of SYNOPSIS, the tags of *OPTIONS.
    lines = [(line, tag, True) for line, tag, _ in page.lines("SYNOPSIS")]
    for sec in option_sections(page):
        if sec != "SYNOPSIS":
            lines += list(page.lines(sec))
    checks.expect(bool(options_in(lines, True, synopsis=False)),
                  f"{page.name}: no OPTIONS section with options")
    compare_scope(checks, page, "options", help_, lines)
    # Every option mentioned anywhere is one of some program (in EXAMPLES,
    # the command lines of other programs, such as systemctl, are left alone).
    for sec in page.sections():
        if sec == "SEE ALSO":
            continue
        lines = page.lines(sec)
        if sec == "EXAMPLES":
            lines = [entry for entry in lines
                     if not re.match(r"^[\w.-]+ ", entry[0])
                     or entry[0].split()[0] in PROGRAMS]
        for opt in sorted(options_in(lines, False) - all_options):
            checks.expect(False, f"{page.name}: section {sec} mentions {opt}, which no program has")


def check_subcommands(checks, page, program, help_):
    subs = page.subsections("COMMANDS")
    by_name = {}
    for sub in subs:
        words = sub.split()
        if words and words[0] == "edgemon" and len(words) > 1:
            words = words[1:]
        if words:
            by_name[" ".join(words)] = sub
    # A group of subcommands without a subsection of its own (`edgemon trace
    # merge`): one subsection per member.
    names = []
    for name in help_.subcommands:
        group = [] if name in by_name else run_help(program, name).subcommands
        names += [name + " " + member for member in group] if group else [name]
    for name in names:
        if not checks.expect(name in by_name,
                             f"{page.name}: COMMANDS has no subsection (.SS) for `edgemon {name}`"):
            continue
        sub_help = run_help(program, *name.split())
        lines = list(page.lines("COMMANDS", by_name[name]))
        compare_scope(checks, page, f"edgemon {name}", sub_help, lines, exempt=("--help",))
        # Prose in the subsection names its own options or global ones.
        for opt in sorted(options_in(lines, False) - set(sub_help.options) - set(help_.options)):
            checks.expect(False, f"{page.name}: edgemon {name} mentions {opt}, an option of "
                                 f"neither `edgemon {name}` nor edgemon")
    for name in sorted(set(by_name) - set(names)):
        checks.expect(False, f"{page.name}: COMMANDS documents `edgemon {name}`, which "
                             f"edgemon --help does not list")


def config_keys(source):
    with open(os.path.join(source, "daemon/runtime/config.cc"), encoding="utf-8") as f:
        text = f.read()
    keys = re.findall(r'\{"(\w+)",\s*"(\w+)",\s*Key::k\w+', text)
    if not keys:
        raise SystemExit("daemon/runtime/config.cc: no key table ({\"table\", \"key\", Key::...}) found")
    return [f"{t}.{k}" for t, k in keys]


def man_key_defaults(page):
    """CONFIGURATION tags of the form `table.key = value`."""
    out = {}
    for line, tag, _ in page.lines("CONFIGURATION"):
        if not tag:
            continue
        m = re.match(r"^\s*([a-z_]+\.[a-z_]+)\s*(?:=\s*(.*?))?\s*$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def toml_value_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def check_config(checks, source, pages):
    keys = config_keys(source)
    daemon_page = pages["edgemond.8"]
    documented = man_key_defaults(daemon_page)
    with open(os.path.join(source, "packaging/edgemond.toml"), "rb") as f:
        toml = tomllib.load(f)
    with open(os.path.join(source, "packaging/edgemond.toml"), encoding="utf-8") as f:
        toml_text = f.read()
    docs = {}
    for page in ("daemon.md", "control.md"):
        with open(os.path.join(source, "docs", page), encoding="utf-8") as f:
            docs[page] = f.read()
    control_page = pages.get("edgemon-control.8")
    control_documented = man_key_defaults(control_page) if control_page else {}
    for key in keys:
        table, name = key.split(".")
        # The packaged file lists every key (commented out when it has no default).
        in_toml = table in toml and name in toml[table]
        commented = re.search(rf"(?ms)^\[{table}\].*?^#\s*{name}\s*=", toml_text) is not None
        checks.expect(in_toml or commented, f"packaging/edgemond.toml does not list {key}")
        where = [("edgemond.8", documented)]
        if table == "control":
            where.append(("edgemon-control.8", control_documented))
        for page_name, tags in where:
            if not checks.expect(key in tags,
                                 f"{page_name}: CONFIGURATION has no tag for key {key}"):
                continue
            if in_toml and tags[key]:
                want = toml_value_text(toml[table][name])
                checks.expect(tags[key] == want,
                              f"{page_name}: {key} = {tags[key]}, packaging/edgemond.toml "
                              f"says {want}")
        doc = "control.md" if table == "control" else "daemon.md"
        checks.expect(f"`{key}`" in docs[doc], f"docs/{doc} does not document `{key}`")
    if any(k.startswith("control.") for k in keys):
        checks.expect("(control.md#turning-it-on)" in docs["daemon.md"],
                      "docs/daemon.md does not point to control.md#turning-it-on for the "
                      "[control] keys")
    for page_name, tags in (("edgemond.8", documented), ("edgemon-control.8", control_documented)):
        for key in sorted(set(tags) - set(keys)):
            checks.expect(False, f"{page_name}: CONFIGURATION documents {key}, which "
                                 f"daemon/runtime/config.cc does not accept")


def check_exit_statuses(checks, source, pages):
    for page, files in (("edgemon.1", ["client/cli/cli.h"]),
                        ("edgemond.8", ["daemon/main.cc"]),
                        ("edgemon-control.8", ["daemon/control/main.cc"])):
        if page not in pages:
            continue
        text = pages[page].text("EXIT STATUS")
        for rel in files:
            with open(os.path.join(source, rel), encoding="utf-8") as f:
                constants = re.findall(r"constexpr int (kExit\w+) = (\d+);", f.read())
            checks.expect(bool(constants), f"{rel}: no kExit constants found")
            for name, value in constants:
                checks.expect(re.search(rf"(?<![\d.]){value}(?!\d)", text) is not None,
                              f"{page}: EXIT STATUS does not describe {value} ({name} in {rel})")


def check_install(checks, source, man_dir, programs):
    with open(os.path.join(source, "packaging/CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    installed = re.search(r"foreach\(program ([^)]*)\)", cmake)
    listed = re.search(r"foreach\(page ([^)]*)\)", cmake)
    if not checks.expect(installed and listed,
                         "packaging/CMakeLists.txt: no foreach(program ...) or foreach(page ...)"):
        return
    installed = installed.group(1).split()
    listed = listed.group(1).split()
    files = sorted(f for f in os.listdir(man_dir) if re.search(r"\.[1-8]$", f))
    for page in files:
        checks.expect(page in listed, f"packaging/CMakeLists.txt does not install {page}")
    for page in listed:
        checks.expect(page in files, f"packaging/CMakeLists.txt installs {page}, which "
                                     f"packaging/man/ lacks")
    for program in installed:
        checks.expect(any(re.fullmatch(rf"{re.escape(program)}\.[1-8]", p) for p in files),
                      f"{program} is installed without a man page")
    for program in programs:
        checks.expect(program in installed, f"{program} is checked here but not installed")


def check_references(checks, pages, all_pages):
    for name, page in pages.items():
        stem, section = name.rsplit(".", 1)
        th = page.th or []
        checks.expect(len(th) >= 2 and plain(th[0]).lower() == stem and th[1] == section,
                      f"{name}: .TH says {' '.join(th[:2])}, expected {stem.upper()} {section}")
        whole = "\n".join(page.text(sec) for sec in page.sections())
        for ref, sec in sorted(set(re.findall(r"\b((?:edgemon|edgetop)[\w-]*) ?\(([1-8])\)",
                                              whole))):
            checks.expect(f"{ref}.{sec}" in all_pages,
                          f"{name}: refers to {ref}({sec}), which packaging/man/ lacks")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    for flag in ("edgemond", "edgemon", "edgetop", "sim", "control", "probe"):
        ap.add_argument(f"--{flag}", required=True)
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    man_dir = os.path.join(source, "packaging/man")
    programs = {"edgemond": (args.edgemond, "edgemond.8"),
                "edgemon": (args.edgemon, "edgemon.1"),
                "edgetop": (args.edgetop, "edgetop.1"),
                "edgemon-sim": (args.sim, "edgemon-sim.1"),
                "edgemon-control": (args.control, "edgemon-control.8"),
                "edgemon-probe": (args.probe, "edgemon-probe.1")}
    all_pages = sorted(f for f in os.listdir(man_dir) if re.search(r"\.[1-8]$", f))
    pages = {name: Page(os.path.join(man_dir, name)) for name in all_pages}
    helps = {prog: run_help(path) for prog, (path, _) in programs.items()}
    all_options = set()
    for prog, h in helps.items():
        all_options |= set(h.options)
        for sub in h.subcommands:
            all_options |= set(run_help(programs[prog][0], sub).options)

    checks = Checks()
    for prog, (path, page_name) in programs.items():
        if not checks.expect(page_name in pages, f"{prog} has no man page {page_name}"):
            continue
        page = pages[page_name]
        check_program(checks, page, helps[prog], all_options)
        if helps[prog].subcommands:
            check_subcommands(checks, page, path, helps[prog])
    if "edgemond.8" in pages:
        check_config(checks, source, pages)
    check_exit_statuses(checks, source, pages)
    check_install(checks, source, man_dir, list(programs))
    check_references(checks, pages, all_pages)
    print(f"{checks.count} checks, {len(checks.failures)} failed")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
