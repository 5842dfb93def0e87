// Package model holds the plain data that flows between mcp's packages: the desired
// configuration read from HCL (Desired), the rendered per-pool configuration (Rendered),
// the observed fleet (Fleet) and the typed node steps (Step). It has no behaviour beyond
// small helpers and does no I/O, so every other package may import it.
package model
