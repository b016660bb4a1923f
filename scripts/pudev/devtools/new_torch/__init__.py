"""`pudev new-torch`: release day, by role. `answers` asks the package index and the registry;
`readiness` decides each variant of the newest line from those answers alone (pure); `matrix_edit`
and `standins_edit` turn a decision into new file texts; `transaction` applies them, with the locks
and tables, in a scratch copy and moves the result into the tree only when every step succeeded;
`command` is the command itself."""
