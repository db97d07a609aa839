"""Qt-free application logic: the segmentation pipeline (photo + drawing -> labels), image and
label files, saved sessions, and the colouring of labels and iterates."""
