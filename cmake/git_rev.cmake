# Writes OUT (a header defining TUNE_GIT_REV) from `git describe`, only when it changes, so that
# every build records the revision it was built from (with -dirty for uncommitted changes).
execute_process(COMMAND git describe --always --dirty --abbrev=12 WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rev)
  set(rev "unknown")
endif()
set(text "#define TUNE_GIT_REV \"${rev}\"\n")
# written only when it changes (no @VAR@ in it to substitute)
file(CONFIGURE OUTPUT ${OUT} CONTENT "${text}" @ONLY)
