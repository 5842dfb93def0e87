// Package ignition is mcp's one room for Ignition configs. It alone imports Ignition's
// config/v3_* packages (internal/layering keeps it so): every other package asks it for
//
//   - the specs mcp knows, each with Ignition's own parser (Spec, Lookup, All), and a
//     parse of any of them into the newest spec's types (ParseAny);
//   - pointer configs: the user-data that makes a booting node fetch and merge its pool's
//     config from the boot server (Pointer);
//   - served configs: a pool's rendered config with the first-boot record (and, asked,
//     the first-boot unit) added, in every spec that can express it, with the reason for
//     each that cannot (Serve) — what the boot server prepares and answers /config/<pool>
//     with.
//
// It does no I/O.
package ignition
