"""Process-reward building blocks: split a completion into steps and assemble TRL stepwise (PRM) rows."""
