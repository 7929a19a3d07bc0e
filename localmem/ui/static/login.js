"use strict";
document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const status = document.getElementById("status");
  const response = await fetch("/ui/login", {
    method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({token: document.getElementById("token").value}),
  });
  if (response.ok) { location.href = "/ui/"; return; }
  const body = await response.json().catch(() => ({message: response.statusText}));
  status.textContent = body.message || "Sign-in failed";
  status.hidden = false;
});
