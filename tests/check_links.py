"""Checks the relative links of the project's Markdown pages: ctest's doc.links.

Usage: check_links.py ROOT. Every [text](target) in README.md, docs/*.md and data/**/README.md
whose target is not a URL must name a file or folder that exists (the #anchor aside). Prints
each dead link as FILE:LINE: target and exits 1 if there is one.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
pages = [root / "README.md", *sorted((root / "docs").glob("*.md")),
         *sorted((root / "data").rglob("README.md"))]
link = re.compile(r"\]\(([^)\s]+)\)")
dead = 0
checked = 0
for page in pages:
    in_code = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in link.findall(line):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            checked += 1
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                print(f"{page.relative_to(root)}:{number}: dead link {target}")
                dead += 1
print(f"{checked} relative links in {len(pages)} pages, {dead} dead")
sys.exit(1 if dead else 0)
