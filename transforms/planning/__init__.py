"""Know before you spend: what a stage would send (requests, tokens, money) given its inputs and its caches, and
the budgets that cap it. `rewardmill plan` prints these plans; the label, steps and rollouts stages admit work
under their `budget` from the same plans."""
