-- The clarification measures read an index of the questions the store
-- keeps in memory and brings up to date from the ids written since its
-- last read (store/clarify.go), no longer a window of questions by the
-- time asked: nothing reads questions_by_asked, and every ask wrote it.
DROP INDEX questions_by_asked;
