# Written by mcp (config 50-chrony).
server ${server} iburst
driftfile /var/lib/chrony/drift
makestep 1.0 3
rtcsync
