// Package ignition is mcp's one room for Ignition configs. It alone imports Ignition's
// config/v3_* packages (internal/layering keeps it so): every other package asks it for
//
//   - the specs mcp knows, each with Ignition's own parser (Spec, Lookup, All), and a
//     parse of any of them into the newest spec's types (ParseAny);
//   - pointer configs: the user-data that makes a booting node fetch and merge its pool's
//     config from the boot server (Pointer).
//
// It does no I/O.
package ignition
