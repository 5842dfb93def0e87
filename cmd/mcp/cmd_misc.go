package main

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/state"
)

func (c *cli) version(args []string) int {
	pos, err := c.parse(c.newFlags("version"), args)
	if err != nil {
		return 1
	}
	if len(pos) > 0 {
		return c.tooMany("version", pos)
	}
	fmt.Fprintf(c.stdout, "mcp %s\n", engine.Version)
	return 0
}

// forceUnlock removes the state lock with the given ID. When the backend can tell that the
// holder is alive (state.LockInspector), it says who and why that is dangerous and asks for
// "yes" on a terminal; without one, or with another answer, it refuses unless -force — as
// Terraform's force-unlock does. A holder that cannot be proved dead (it runs on another
// machine, boot or PID namespace) is refused without asking: only -force removes its lock.
// A holder known to be gone is unlocked without asking.
func (c *cli) forceUnlock(args []string) int {
	fs := c.newFlags("force-unlock")
	var lf loadFlags
	lf.register(fs, false)
	force := fs.Bool("force", false, "do not ask, even when the lock's holder looks alive")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 1 {
		return c.tooMany("force-unlock", pos[1:])
	}
	if len(pos) != 1 {
		return c.errorf("usage: mcp force-unlock [-force] LOCK_ID (the ID the lock error printed)")
	}
	id := pos[0]
	ws := c.load(&lf)
	if ws == nil {
		return 1
	}
	if insp, ok := ws.Backend.(state.LockInspector); ok && !*force {
		st, err := insp.LockStatus(c.ctx)
		if err != nil {
			return c.failErr(err)
		}
		// Another ID, or no lock: ForceUnlock says so.
		if st != nil && st.Holder.ID == id && st.Alive && st.Unchecked {
			// Not proved dead is not dead: only -force says the holder is gone.
			h := st.Holder.Shown()
			return c.errorf("the state lock %s is held by %s (pid %d, operation \"%s\"), which cannot be proved dead: %s. "+
				"If you know it has stopped (its machine or container is gone), run mcp force-unlock -force %s",
				h.ID, h.Who, h.PID, h.Operation, views.Untrusted(st.Detail), h.ID)
		}
		if st != nil && st.Holder.ID == id && st.Alive {
			if code := c.confirmForceUnlock(st, lf.input); code != 0 {
				return code
			}
		}
	}
	if err := ws.Backend.ForceUnlock(c.ctx, id); err != nil {
		return c.failErr(err)
	}
	fmt.Fprintln(c.stdout, "The state has been unlocked.")
	return 0
}

// confirmForceUnlock explains whose lock it is and asks for "yes"; 0 means confirmed.
func (c *cli) confirmForceUnlock(st *state.LockStatus, input bool) int {
	h := st.Holder.Shown()
	fmt.Fprintf(c.stdout, "The state lock %s is held by %s (pid %d, operation \"%s\", since %s), and that holder looks alive: %s.\n\n"+
		"Removing the lock of a live holder lets another run change the state and the nodes while it still does: "+
		"two applies at once drain and reboot more nodes than max_unavailable allows, and their state writes "+
		"overwrite each other. Wait for it to finish, or stop it first.\n",
		h.ID, h.Who, h.PID, h.Operation, h.Created.Format(time.RFC3339), views.Untrusted(st.Detail))
	if !input || !isTerminal(c.stdin) {
		where := "there is no terminal to confirm on"
		if !input {
			where = "-input=false asks nothing"
		}
		return c.fail("The lock's holder looks alive", fmt.Sprintf("%s; if you are sure it must go, run:\n  mcp force-unlock -force %s", views.Capitalize(where), h.ID))
	}
	fmt.Fprint(c.stdout, "\nDo you really want to force-unlock?\n  Only 'yes' will be accepted to confirm.\n\n  Enter a value: ")
	line, _ := bufio.NewReader(c.stdin).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		fmt.Fprintln(c.stdout, "\nForce-unlock cancelled.")
		return 1
	}
	return 0
}
