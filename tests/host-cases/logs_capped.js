for (let i = 0; i < 100; i++) console.log("line " + i);
return "ok";
