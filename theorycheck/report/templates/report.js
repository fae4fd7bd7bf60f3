// The failure filter, and a mark on every plot that did not load.  No network.
(function () {
  var box = document.getElementById("only-problems");
  box.addEventListener("change", function () {
    document.body.classList.toggle("only-problems", box.checked);
  });
  window.addEventListener("load", function () {
    var images = document.querySelectorAll("img");
    var broken = 0;
    images.forEach(function (img) {
      if (!img.complete || img.naturalWidth === 0) {
        img.classList.add("broken");
        broken += 1;
      }
    });
    document.body.dataset.images = String(images.length);
    document.body.dataset.brokenImages = String(broken);
  });
})();
