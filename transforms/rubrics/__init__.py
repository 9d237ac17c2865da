"""Generated rubrics: the rubrics stage's writer, its criteria, its prompts, AutoRule and the rule record."""
