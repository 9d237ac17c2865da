"""`rewardmill doctor`'s checks: each looks at one part of the setup and says what is wrong and how to fix it."""
