setTimeout(() => console.log('too late'), 30);
await new Promise((resolve) => setTimeout(resolve, 0));
console.log('returning');
return 'settled first';
