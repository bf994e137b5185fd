"""What a whole window's run is turned into: an animation of its frames, the self-contained web page,
the tour's notes for that page. Above the views (it builds and drives them) and below the main
window (whose menus call it); ``qt/export/`` holds what writes one view's figure or data."""
