"""``orrery bench suite``: a measuring session (:mod:`.session`), figures derived from it
(:mod:`.analysis`), PNG plots (:mod:`.plots`) and the Markdown report (:mod:`.markdown`)."""
