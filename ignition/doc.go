// Package ignition is mcp's one room for Ignition configs: the specs mcp knows, each with
// Ignition's own parser (Spec, Lookup, All), and a parse of any of them into the newest
// spec's types (ParseAny). It alone imports Ignition's config/v3_* packages
// (internal/layering keeps it so): every other package asks it. It does no I/O.
package ignition
