-- A site rule file that returns a number instead of a rule table (line 2).
return 42
