// Package model holds the plain data that flows between mcp's packages: the desired
// configuration read from HCL (Desired), the rendered per-pool configuration (Rendered),
// the observed fleet (Fleet), the typed node steps (Step), and the specs with which
// providers and state backends declare their configuration blocks (BlockSpec, read into
// Settings by the configuration language). It has no behaviour beyond small helpers and
// does no I/O, so every other package may import it.
package model
