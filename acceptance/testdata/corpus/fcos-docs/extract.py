# Extracts the Butane configs of the Fedora CoreOS documentation (every listing of
# modules/ROOT/pages/*.adoc that begins "variant: fcos") into PAGE-N.bu here, with the
# page's AsciiDoc attributes (antora.yml) substituted as the documentation renders them.
# Run in a git directory of github.com/coreos/fedora-coreos-docs:
#   python3 extract.py OUTDIR > OUTDIR/SOURCES.tsv
import re, subprocess, sys
out = sys.argv[1]
git = lambda *a: subprocess.run(['git', '--git-dir=.'] + list(a), capture_output=True, text=True, check=True).stdout
commit = git('rev-parse', 'HEAD').strip()
attrs = dict(re.findall(r'^    ([\w-]+): (.+)$', git('show', 'HEAD:antora.yml'), re.M))
print('commit\tpath\tline\tfile')
for path in sorted(git('ls-tree', '--name-only', 'HEAD', 'modules/ROOT/pages/').split()):
    if not path.endswith('.adoc'):
        continue
    lines = git('show', 'HEAD:' + path).split('\n')
    n, i = 0, 0
    while i < len(lines):
        if lines[i] == '----' and i + 1 < len(lines) and lines[i + 1].startswith('variant: fcos'):
            j = lines.index('----', i + 1)
            text = '\n'.join(lines[i + 1:j]) + '\n'
            if 'subs="attributes"' in lines[i - 1]:
                text = re.sub(r'\{([\w-]+)\}', lambda m: attrs.get(m.group(1), m.group(0)), text)
            n += 1
            name = '%s-%d.bu' % (path.split('/')[-1][:-5], n)
            open(out + '/' + name, 'w').write(text)
            print('%s\t%s\t%d\t%s' % (commit, path, i + 2, name))
            i = j
        i += 1
