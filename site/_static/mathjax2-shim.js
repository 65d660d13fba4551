// The ipywidgets HTML manager typesets widget labels with MathJax 2's API (MathJax.Hub.Queue);
// the site serves MathJax 3. Deferred scripts (MathJax) have run when DOMContentLoaded fires, and this
// listener is registered before the widget manager's, so widgets find a Hub that forwards to MathJax 3.
document.addEventListener("DOMContentLoaded", function () {
  if (window.MathJax && !window.MathJax.Hub) {
    window.MathJax.Hub = {
      Queue: function (args) {
        var element = Array.isArray(args) ? args[2] : null;
        if (element && MathJax.startup && MathJax.typesetPromise) {
          MathJax.startup.promise.then(function () { return MathJax.typesetPromise([element]); });
        }
      },
    };
  }
});
