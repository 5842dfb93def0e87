// Package views renders what mcp's commands show, for people (text, tables) and for tools
// (JSON in the shape of Terraform's plan and machine-readable UI). As Terraform's
// command/views, each command has one view interface — Plan, Apply, Show — with a human
// and a JSON implementation that its constructor picks from the -json flag, so that a
// command holds no formatting and no branch on its output's form. Views decide nothing;
// they show what the planner and the engine produced.
package views
