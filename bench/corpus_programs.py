"""The programs of bench/replay_corpus.py: each one's initial state, command and check.

The inputs come from what every Debian host of the same release has: Debian's kernel headers
(/usr/include/linux, from linux-libc-dev, which build-essential brings), without its netfilter
headers (~620 files, 5 MB), laid down COPIES times side by side. Each program runs for about a
second or more on ext4: at 0.1-0.25 s (one copy, 200 rows) the run-to-run spread of a
program's own ratio to ext4 was 3-10 %, and so its error moved up to 15 points between
sittings (bench/journal/replay-fidelity.md, "Programs long enough to measure"). The traces
shipped in traces/ are the shorter programs' (one copy, 200 rows), small enough to ship.
Every check returns what the run must have left (files and bytes, rows, commits): the real
runs must match what the recording run left, so a run that did less is caught.
"""

import os
import shutil
import subprocess

TREE = "/usr/include/linux"
ROWS = 1000  # the SQLite programs' one-row commits
COPIES = 8  # copies of the tree: linux, linux-1, ... linux-7
PG_BIN = "/usr/lib/postgresql/15/bin"


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def out(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout.strip()


def tree_into(dst):
    """Debian's kernel headers copied COPIES times into `dst` (directories linux, linux-1…)."""
    os.makedirs(dst, exist_ok=True)
    for i in range(COPIES):
        name = "linux" if i == 0 else f"linux-{i}"
        # Without the netfilter headers (a fifth of the files).
        sh("sh", "-c", f"tar cf - -C {os.path.dirname(TREE)} --exclude='linux/netfilter*' "
                       f"--transform='s,^linux,{name},' linux | tar xf - -C {dst}")


def files_and_bytes(path):
    """(regular files, their bytes) under `path`."""
    n = size = 0
    for d, _, names in os.walk(path):
        for name in names:
            p = os.path.join(d, name)
            if os.path.isfile(p) and not os.path.islink(p):
                n, size = n + 1, size + os.path.getsize(p)
    return [n, size]


class Program:
    """A program of the corpus. `fuse` is True, or why it does not run on the FUSE target."""

    name = ""
    fuse = True

    def seed(self, root, work):
        pass

    def command(self, root, work):
        raise NotImplementedError

    def check(self, root):
        raise NotImplementedError

    def env(self):
        return {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                "LC_ALL": "C"}


class CpTree(Program):
    """`cp -a` of a source tree (coreutils 9 copies file data with copy_file_range)."""

    name = "cp-a"

    def seed(self, root, work):
        tree_into(os.path.join(root, "src"))

    def command(self, root, work):
        return ["cp", "-a", "src", "dst"]

    def check(self, root):
        return files_and_bytes(os.path.join(root, "dst"))


class Rsync(CpTree):
    """`rsync -a` of a source tree (a sender, a receiver, temporary files renamed in place)."""

    name = "rsync"

    def command(self, root, work):
        return ["rsync", "-a", "src/", "dst/"]


class GitCloneCommit(Program):
    """A local `git clone` of a repository of the tree, then an edit and a commit.

    The index is dated two seconds ahead after the clone, as a commit made later than the
    checkout finds it. Otherwise `git commit -a` hashes again and freshens every file
    whose modification time falls in the second the clone wrote its index ("racily
    clean"), a number set by where a second's boundary fell during the checkout: 39 to
    4,946 of the 4,984 files in five runs (2026-11-30), so the program's own work, not
    the file system, set its time, and the one recording the replay has was one draw of it.
    """

    name = "git-clone-commit"
    comms = ["git"]

    def seed(self, root, work):
        tmpl = os.path.join(work, "template-git")
        if not os.path.exists(tmpl):
            tree_into(os.path.join(tmpl, "w"))
            git = ["git", "-c", "user.name=fsarena", "-c", "user.email=fsarena@example.org"]
            sh(*git, "-c", "init.defaultBranch=main", "init", "-q", cwd=os.path.join(tmpl, "w"),
               env=self.env())
            sh(*git, "add", ".", cwd=os.path.join(tmpl, "w"), env=self.env())
            sh(*git, "commit", "-qm", "headers", cwd=os.path.join(tmpl, "w"), env=self.env())
            sh("git", "clone", "-q", "--bare", "w", "src.git", cwd=tmpl, env=self.env())
        sh("cp", "-a", os.path.join(tmpl, "src.git"), root)

    def command(self, root, work):
        return ["sh", "-c", "git clone -q src.git work && cd work && touch -d '+2 seconds' "
                ".git/index && echo '/* edited */' >> "
                "linux/acct.h && git -c user.name=fsarena -c user.email=fsarena@example.org "
                "commit -qam edit"]

    def check(self, root):
        return [out("git", "-C", os.path.join(root, "work"), "rev-list", "--count", "HEAD",
                    env=self.env())]


class Sqlite(Program):
    """sqlite3: ROWS one-row commits with `synchronous=FULL`, in a given journal mode."""

    fuse = True

    def __init__(self, mode):
        self.mode = mode
        self.name = f"sqlite-{'wal' if mode == 'WAL' else 'rollback'}"

    def command(self, root, work):
        sql = (f"PRAGMA journal_mode={self.mode}; PRAGMA synchronous=FULL; "
               "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); "
               + "".join(f"INSERT INTO t(v) VALUES (hex(randomblob(60))); " for _ in range(ROWS))
               + "SELECT count(*) FROM t;")
        return ["sqlite3", "app.db", sql]

    def check(self, root):
        return [out("sqlite3", os.path.join(root, "app.db"), "SELECT count(*) FROM t")]


class Postgres(Program):
    """PostgreSQL 15: initdb, a server started, `pgbench -i` at scale 1, the server stopped."""

    name = "postgres-pgbench"
    fuse = "PostgreSQL refuses a data directory its user does not own (ntfs-3g shows root's)"

    def seed(self, root, work):
        sock = os.path.join(work, "pgsock")
        os.makedirs(sock, exist_ok=True)
        os.chmod(sock, 0o777)
        sh("chown", "postgres:postgres", root)

    def command(self, root, work):
        sock = os.path.join(work, "pgsock")
        pg = (f"{PG_BIN}/initdb -D pg -A trust -U postgres >/dev/null && "
              f"{PG_BIN}/pg_ctl -D pg -o '-k {sock} -c listen_addresses=' -w -l pg.log start "
              f">/dev/null && {PG_BIN}/pgbench -h {sock} -q -i -s 1 postgres 2>/dev/null && "
              f"{PG_BIN}/pg_ctl -D pg -w -m fast stop >/dev/null")
        return ["runuser", "-u", "postgres", "--", "sh", "-c", pg]

    def check(self, root):
        # The cluster was shut down cleanly after pgbench's load: its accounts table (100,000
        # rows at scale 1) is the one relation of more than 10 MB.
        state = out(f"{PG_BIN}/pg_controldata", os.path.join(root, "pg"))
        biggest = max(os.path.getsize(os.path.join(d, n))
                      for d, _, names in os.walk(os.path.join(root, "pg", "base")) for n in names)
        return ["cluster state: shut down" in state, biggest > 10 << 20]


class DpkgUnpack(Program):
    """dpkg unpacking a package of the tree into a root of its own (it writes each file as
    .dpkg-new, syncs them and renames them into place, then updates its database)."""

    name = "dpkg-unpack"
    comms = ["dpkg"]

    def seed(self, root, work):
        deb = os.path.join(work, "headers.deb")
        if not os.path.exists(deb):
            pkg = os.path.join(work, "template-deb")
            tree_into(os.path.join(pkg, "usr", "include"))
            os.makedirs(os.path.join(pkg, "DEBIAN"))
            with open(os.path.join(pkg, "DEBIAN", "control"), "w") as f:
                f.write("Package: corpus-headers\nVersion: 1.0\nArchitecture: all\n"
                        "Maintainer: fsarena <fsarena@example.org>\nDescription: headers\n")
            sh("dpkg-deb", "-Zgzip", "-b", pkg, deb, stdout=subprocess.DEVNULL)
        shutil.copy(deb, os.path.join(root, "headers.deb"))
        for d in ["info", "updates", "triggers"]:
            os.makedirs(os.path.join(root, "root", "var", "lib", "dpkg", d))
        open(os.path.join(root, "root", "var", "lib", "dpkg", "status"), "w").close()

    def command(self, root, work):
        return ["sh", "-c", 'dpkg --root="$PWD/root" --force-all --force-script-chrootless '
                "--unpack headers.deb >/dev/null"]

    def check(self, root):
        return files_and_bytes(os.path.join(root, "root", "usr"))


class GccMake(Program):
    """make and gcc building a small C program (24 files) and linking it."""

    name = "gcc-make"
    comms = ["cc", "gcc", "cc1", "as", "collect2", "ld"]
    FILES = 24

    def seed(self, root, work):
        src = os.path.join(root, "proj")
        os.makedirs(src)
        for i in range(self.FILES):
            body = "".join(
                f"int f{i}_{j}(int x) {{ int s = 0; for (int k = 0; k < x; k++) "
                f"s += (k * {j + 3}) ^ (s >> {j % 7 + 1}); return s + x; }}\n"
                for j in range(60))
            with open(os.path.join(src, f"m{i}.c"), "w") as f:
                f.write(f'#include <stdio.h>\n#include <string.h>\n#include "proj.h"\n{body}'
                        f"int part{i}(void) {{ return f{i}_0({i}) + f{i}_59(3); }}\n")
        with open(os.path.join(src, "proj.h"), "w") as f:
            f.write("".join(f"int part{i}(void);\n" for i in range(self.FILES)))
        with open(os.path.join(src, "main.c"), "w") as f:
            calls = " + ".join(f"part{i}()" for i in range(self.FILES))
            f.write(f'#include <stdio.h>\n#include "proj.h"\nint main(void) '
                    f'{{ printf("%d\\n", {calls}); return 0; }}\n')
        objs = " ".join(f"m{i}.o" for i in range(self.FILES))
        with open(os.path.join(src, "Makefile"), "w") as f:
            f.write(f"CFLAGS = -O2 -g -pipe\napp: main.o {objs}\n\t$(CC) -o $@ $^\n"
                    f"%.o: %.c proj.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n")

    def command(self, root, work):
        return ["make", "-s", "-C", "proj"]

    def check(self, root):
        return [out(os.path.join(root, "proj", "app"))]


class PythonSmallFiles(Program):
    """python3 writing 2,000 small files over 40 directories (a cache-like tree), then an
    index of them written to a temporary file and renamed in place."""

    name = "python-small-files"
    SCRIPT = (
        "import os, random, json\n"
        "r = random.Random(7)\n"
        "index = {}\n"
        "for i in range(2000):\n"
        "    d = 'cache/%02x' % (i % 40)\n"
        "    os.makedirs(d, exist_ok=True)\n"
        "    p = '%s/item-%05d.txt' % (d, i)\n"
        "    body = ''.join(r.choice('abcdefgh ') for _ in range(r.randint(200, 6000)))\n"
        "    with open(p, 'w') as f:\n"
        "        f.write(body)\n"
        "    index[p] = len(body)\n"
        "with open('index.json.tmp', 'w') as f:\n"
        "    json.dump(index, f)\n"
        "os.rename('index.json.tmp', 'index.json')\n"
    )

    def command(self, root, work):
        return ["python3", "-c", self.SCRIPT]

    def check(self, root):
        return files_and_bytes(os.path.join(root, "cache"))


PROGRAMS = [CpTree(), Rsync(), GitCloneCommit(), Sqlite("WAL"), Sqlite("DELETE"), Postgres(),
            DpkgUnpack(), GccMake(), PythonSmallFiles()]
