# orrery_write_if_changed(PATH CONTENT): writes CONTENT to PATH unless the file already holds exactly that, so that
# a re-configure that generates the same source does not make the build compile it again.
function(orrery_write_if_changed path content)
  set(old "")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT "${old}" STREQUAL "${content}")
    file(WRITE "${path}" "${content}")
  endif()
endfunction()
