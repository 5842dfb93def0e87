import sys, re, subprocess, textwrap, base64
src, params = sys.argv[1], dict(a.split('=',1) for a in sys.argv[2:])
text = subprocess.run(['git','--git-dir=.','show','HEAD:'+src],capture_output=True,text=True,check=True).stdout
lines = text.split('\n')
i = lines.index('objects:')
j = next((k for k in range(i+1,len(lines)) if lines[k].startswith('parameters:')), len(lines))
obj = lines[i+1:j]
# the object is the single list item: turn its "- " into spaces and dedent
m = re.match(r'^(\s*)- ', obj[0])
obj[0] = obj[0][:m.end()-2] + '  ' + obj[0][m.end():]
body = textwrap.dedent('\n'.join(obj)).rstrip('\n') + '\n'
def sub(m):
    k = m.group(1) or m.group(2)
    return params[k]
body = re.sub(r'\$\{\{(\w+)\}\}|\$\{(\w+)\}', sub, body)
sys.stdout.write(body)
